"""The processes of one ncu run: in their own process group, or inside a job's.

Outside a scheduler, ncu starts in a session of its own, so that a Ctrl-C at the terminal reaches
capture alone and capture winds ncu down, and its whole group is killed at the end. Inside a
Slurm job, a process group of its own would take ncu and its target out of the job's reach
(`proctrack/pgid` signals the job's process group; they would escape scancel and outlive the
job), so there they stay in capture's group, and what capture kills it finds by parentage
(/proc): ncu, its descendants, and its target by PID once ncu has ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from .jobs import in_slurm_job, parent_of


def own_group() -> bool:
    """Whether ncu gets a process group (and session) of its own: everywhere but in a job."""
    return not in_slurm_job()


def descendants(pid: int) -> list[int]:
    """Every live process below `pid`, children first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = parent_of(int(entry))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop(0)
        found.append(child)
        todo += children.get(child, [])
    return found


def runs_under(pid: int, ancestor: int, grouped: bool) -> bool:
    """True if `pid` still runs below `ancestor` (ncu): in its process group where ncu has one,
    else among its descendants (so a reused PID is never signalled)."""
    if grouped:
        try:
            return os.getpgid(pid) == ancestor
        except ProcessLookupError:
            return False
    return pid in descendants(ancestor)


def signal_tree(root: int, sig: signal.Signals, grouped: bool) -> None:
    """Send `sig` to `root` and everything below it: its process group where it has one."""
    if grouped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(root, sig)
        return
    for pid in [root, *descendants(root)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_leftover(target: int | None, status_file: Path) -> None:
    """Kill the replay target of an ended ncu if it still runs (inside a job, where no process
    group holds it): recognised by the status file on its command line, so that a reused PID is
    never killed."""
    if target is None:
        return
    try:
        argv = Path(f"/proc/{target}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if str(status_file).encode() in argv:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)
