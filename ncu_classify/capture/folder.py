"""A capture folder owned by one capture at a time, and the OS errors of writing into it.

Two captures writing into one folder (two `--resume` started together, two shards) would
interleave status files and overwrite each other's reports and manifest: a lock file held for
the whole capture refuses the second one. The lock is an flock on `.capture.lock`, so it goes
away with the process however it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import OutputError, UsageError
from ..read.names import is_report_name, report_stem
from .manifest import MANIFEST_NAME

LOCK_NAME = ".capture.lock"
FolderMark = tuple[frozenset[str], tuple[int, int] | None]  # batch names taken, manifest stat


@contextlib.contextmanager
def capture_lock(out: Path) -> Iterator[None]:
    """Hold `out`'s capture lock, or UsageError naming the process that holds it."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            raise UsageError(
                f"{out}: another capture is writing into this folder (pid {holder}); wait for"
                " it or choose another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def writing(out: Path) -> Iterator[None]:
    """OS errors while capturing into `out` (read-only or full disk) as one OutputError line."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or out
        raise OutputError(f"{where}: cannot write: {exc.strerror or exc}") from None


def folder_mark(out: Path) -> FolderMark:
    """What a plan depends on in `out`: the batch names its reports and logs take, and the
    manifest's size and modification time (None without one)."""
    try:
        stat = (out / MANIFEST_NAME).stat()
    except OSError:
        return _names_in(out), None
    return _names_in(out), (stat.st_size, stat.st_mtime_ns)


def _names_in(out: Path) -> frozenset[str]:
    """Batch names whose report or log is already in `out`: a new batch never writes over
    one, also in a folder that holds no capture yet."""
    if not out.is_dir():
        return frozenset()
    names = set()
    for path in out.iterdir():
        if is_report_name(path):
            names.add(report_stem(path))
        elif path.name.endswith(".ncu.log"):
            names.add(path.name.removesuffix(".ncu.log"))
    return frozenset(names)
