"""Capture inside a scheduler's job: where Slurm's signals land, and the job script that works.

On `scancel`, Slurm's `proctrack/cgroup` (most clusters) sends SIGTERM to the batch step's direct
child only and SIGKILLs everything else when that child has ended. A job script that runs
`ncu-classify capture ...` as a plain command makes the shell that child: it dies at once, and
capture is killed about 2 s later without winding down (every shape `pending`, no batch
recorded). `exec ncu-classify capture ...` (capture replaces the shell) or `srun ncu-classify
capture ...` (a step whose tasks Slurm signals) let capture wind down. `check_job_script` refuses
the first form before anything runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import UsageError


def in_slurm_job() -> bool:
    """True inside a Slurm job (batch script, srun step or salloc shell)."""
    return "SLURM_JOB_ID" in os.environ


def process_name(pid: int) -> str:
    """The command name of `pid` (/proc/PID/comm), empty where it cannot be read."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def parent_of(pid: int) -> int | None:
    """The parent PID of `pid` from /proc, or None where it has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def check_job_script(pid: int | None = None) -> None:
    """UsageError when this process runs inside a Slurm batch step but is not the step's direct
    child (slurmstepd's): the job script's shell (or a wrapper) is, and on scancel only it
    would be signalled. Nothing is checked outside Slurm, inside an srun step or an salloc
    shell."""
    if not in_slurm_job() or os.environ.get("SLURM_STEP_ID", "batch") != "batch":
        return
    chain = [pid or os.getpid()]
    while len(chain) < 32 and (parent := parent_of(chain[-1])) not in (None, 0, 1):
        chain.append(parent)
    names = [process_name(p) for p in chain]
    if names[1:2] == ["slurmstepd"] or "slurmstepd" not in names:
        return
    child = names.index("slurmstepd") - 1  # the process Slurm would signal
    job = os.environ.get("SLURM_JOB_ID", "?")
    raise UsageError(
        f"capture runs under the job script ({names[child]}, pid {chain[child]}) in Slurm job"
        f" {job}: on scancel Slurm signals that process alone and kills capture 2 s later,"
        " losing the shard; start it with `exec ncu-classify capture ...` or"
        " `srun ncu-classify capture ...`"
    )
