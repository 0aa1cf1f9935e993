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

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish"})


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
    """UsageError when this process runs inside a Slurm batch step under the job script's
    shell (the shell is the step's direct child, capture its child): there scancel would lose
    the shard. Nothing is checked outside Slurm, inside an srun step or an salloc shell."""
    if not in_slurm_job() or os.environ.get("SLURM_STEP_ID", "batch") != "batch":
        return
    parent = parent_of(pid or os.getpid())
    grandparent = parent_of(parent) if parent else None
    if parent is None or grandparent is None:
        return
    shell, stepd = process_name(parent), process_name(grandparent)
    if shell in SHELLS and stepd.startswith("slurmstepd"):
        job = os.environ.get("SLURM_JOB_ID", "?")
        raise UsageError(
            f"capture runs under the job script's shell ({shell}, pid {parent}) in Slurm job"
            f" {job}: on scancel Slurm signals that shell alone and kills capture 2 s later,"
            " losing the shard; start it with `exec ncu-classify capture ...` or"
            " `srun ncu-classify capture ...`"
        )
