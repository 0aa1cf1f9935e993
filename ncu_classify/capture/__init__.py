"""shapes file -> capture folder (reports + manifest.json): the orchestration of ncu processes
that run the replay target (replay/) over the shapes of a shapes file (shapes/). Reads its own
reports through read/.

- manifest: the manifest and its value types (shape and batch records, host, drill request)
- batch: the shapes one ncu process replays
- drill: drill-down captures (the shapes chosen, the warp-state counters added)
- shards: which shapes a shard captures (--shard K/N) and what a shape costs
- order: capture by time: largest first, the time bands, the --coverage cut
- repeats: the duration-only batches of --repeat N
- light: the light tier of --light-after (which shapes, their batches of the light list)
- ncu_cmd: the ncu command line of a batch
- plan: the plan, made once: shapes kept, batches, command lines (--dry-run prints it)
- host: the machine (nvidia-smi, ncu) and its refusals
- jobs: Slurm jobs (the job script's shell, the parent of a process)
- procs: process groups, signals and leftover targets
- folder: the capture folder's lock, what it holds when planned, and its OS errors
- slim: reports rewritten without their SASS and source (--drop-sources)
- outcome: status lines and reports folded into the shape records
- ncu: one ncu process per batch, started, watched and stopped
- run: capture itself (queues per GPU, the manifest rewritten after every batch)
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["CaptureOptions", "Manifest", "capture", "plan_capture", "read_manifest"]
__getattr__ = lazy_face(
    __name__,
    {
        "CaptureOptions": "plan",
        "Manifest": "manifest",
        "capture": "run",
        "plan_capture": "plan",
        "read_manifest": "manifest",
    },
)
