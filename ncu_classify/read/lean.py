"""A copy of a report without its source blocks, which is what every reader opens.

A capture's report is mostly the SASS and CUDA source of the profiled modules (88 % of its bytes,
none of its counters), and ncu_report parses all of it when it opens the file: the Wan 14B
capture (392 kernels, 133 MB) opens in 0.06-0.16 s and reads 1.75-1.94 ms per kernel, its
15.6 MB copy without them in 0.006 s and 1.53-1.68 ms; a 1.7 MB smoke report of 2-3 kernels
reads 2.7-2.8 ms per kernel, its copy 2.0. The copy is made in the kernel (sendfile) from the
block positions the framing check found, into a file in memory (memfd: 40 KB a kernel of a
capture, no creation and unlink on a disk, which cost 0.5 ms a report here) for a report read
and dropped at once, else (and for the copy that a large report's windows share for the whole
run) into a temporary file (copy_file_range).
`local_report` is the whole way from a report as given to the file ncu_report opens: inflated,
checked, without its sources, under a name ncu_report takes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .framing import SUPPORTED_FORMAT, ReportInfo, check_report
from .inflate import plain_file

MIN_SOURCE_BYTES = 256 << 10  # less source than this is cheaper to parse than to copy around


def source_bytes(info: ReportInfo) -> int:
    """Bytes of the report's source-only blocks."""
    return sum(end - start for start, end in info.source_blocks)


@contextlib.contextmanager
def local_report(
    path: Path, scratch: Path | None, checked: ReportInfo | None = None
) -> Iterator[tuple[Path, ReportInfo]]:
    """The report checked whole, as a plain file without its source blocks (`lean`) whose
    suffix tells ncu_report its content (ncu_report picks zstd by the `.ncu-repz` suffix alone
    and reads a misnamed file as empty); `checked`: the framing of `path`, a plain file the
    read plan already checked (a window's lean copy), which is then read as it is."""
    if checked is not None:
        with _openable(path, checked, scratch) as plain:
            yield plain, checked
        return
    with plain_file(path, scratch) as whole:
        info = check_report(whole, label=path)
        with lean_report(whole, info, scratch) as lean, _openable(lean, info, scratch) as plain:
            yield plain, info


@contextlib.contextmanager
def _openable(plain: Path, info: ReportInfo, scratch: Path | None) -> Iterator[Path]:
    """`plain` itself where ncu_report can open it, else a link to it of a plain name: for a
    misnamed report, or a path ncu_report cannot take (it wants UTF-8: a name holding the
    byte 0xff fails in SWIG)."""
    named_right = plain.name.endswith(".ncu-repz") == (info.kind == ".ncu-repz")
    if named_right and utf8_path(plain.resolve()):
        yield plain
        return
    with tempfile.TemporaryDirectory(prefix="ncu-classify-", dir=scratch) as tmp:
        renamed = Path(tmp) / f"report{info.kind}"
        renamed.symlink_to(plain.resolve())
        yield renamed


@contextlib.contextmanager
def lean_report(
    plain: Path, info: ReportInfo, scratch: Path | None, in_memory: bool = True
) -> Iterator[Path]:
    """`plain` without its source blocks, as a file in memory (where the system has them and
    `in_memory`: a copy read and dropped at once, not one kept for a whole run), else as a
    temporary file under `scratch`, gone on the way out; `plain` itself where there is little
    to drop, the format is another, or no copy can be written (neither in memory nor in a
    temporary folder whose path is UTF-8, a full disk)."""
    if info.format_version != SUPPORTED_FORMAT or source_bytes(info) < MIN_SOURCE_BYTES:
        yield plain
        return
    makers = (_memory_file, _temporary_file) if in_memory else (_temporary_file,)
    with contextlib.ExitStack() as stack:
        for make in makers:
            try:
                lean = make(stack, scratch)
                if lean is not None:
                    copy_without_sources(plain, lean, info)
                    break
            except OSError:
                continue
        else:
            lean = plain
        yield lean


def _memory_file(stack: contextlib.ExitStack, scratch: Path | None) -> Path | None:
    """An anonymous file in memory (Linux's memfd), opened by its /proc/self/fd link (which
    forked readers inherit), closed with `stack`; None where there is none. A file on disk
    costs its creation and an unlink that a file system mounted with `discard` makes dear
    (0.5 ms a report here, a third of reading a 3-kernel report)."""
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return None
    descriptor = create("ncu-classify-lean", os.MFD_CLOEXEC)
    stack.callback(os.close, descriptor)
    return Path(f"/proc/self/fd/{descriptor}")


def _temporary_file(stack: contextlib.ExitStack, scratch: Path | None) -> Path | None:
    """A temporary file under `scratch` (default: the system's temporary folder), removed
    with `stack`; None where there is no folder whose path ncu_report can take."""
    if not _usable(scratch):
        return None
    # a file, not a folder: creating and removing a folder costs 0.6 ms more
    handle, name = tempfile.mkstemp(prefix="lean-", suffix=".ncu-rep", dir=scratch)
    os.close(handle)
    stack.callback(_remove, Path(name))
    return Path(name)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def copy_without_sources(plain: Path, lean: Path, info: ReportInfo) -> None:
    """Copy every byte of `plain` outside its source blocks (`info`: its framing) into `lean`."""
    kept, position = [], 0
    for start, end in [*info.source_blocks, (info.size, info.size)]:
        kept.append((position, start - position))
        position = end
    with plain.open("rb") as src, lean.open("wb") as dst:
        for offset, size in kept:
            _copy_range(src.fileno(), dst.fileno(), offset, size)


def _usable(scratch: Path | None) -> bool:
    """Whether the copy can go under `scratch` (default: the system's temporary folder) and
    be opened there: ncu_report takes UTF-8 paths only."""
    try:
        folder = Path(tempfile.gettempdir()) if scratch is None else scratch
    except OSError:  # no usable temporary folder at all
        return False
    return utf8_path(folder)


def utf8_path(path: Path) -> bool:
    """Whether `path` is UTF-8 text (a file name may be any bytes; Python keeps the others as
    surrogate escapes, which ncu_report's SWIG layer refuses)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _copy_range(src: int, dst: int, offset: int, size: int) -> None:
    """`size` bytes of `src` from `offset` appended to `dst`, in the kernel where it can."""
    while size > 0:
        try:
            done = os.copy_file_range(src, dst, size, offset)
        except OSError:  # another file system (a file in memory): sendfile, else Python
            try:
                done = os.sendfile(dst, src, offset, size)
            except OSError:
                done = os.write(dst, os.pread(src, min(size, 8 << 20), offset))
        if done <= 0:
            raise OSError("the report shrank while it was copied")
        offset, size = offset + done, size - done
