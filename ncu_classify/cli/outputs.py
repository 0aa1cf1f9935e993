"""Where a command writes, checked before any work is done, and written without destroying.

`-o` may name a regular file (replaced atomically, keeping its mode), `-` (standard output), or a
character device or FIFO (written into, never replaced: `-o /dev/null` must not turn the device
into a file). A symlink is followed and stays a symlink. A folder, a block device, a socket, one
of the command's own inputs, a capture manifest or an Nsight Compute report is refused with a
usage error before anything is read.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.atomic import write_bytes_atomic
from ..core.errors import OutputError, UsageError
from ..core.text import unicode_safe
from ..read.names import REPORT_SUFFIXES

STDOUT = "-"
STDOUT_CLOSED = False  # set by the CLI when it was started with standard output closed


@dataclass(frozen=True)
class Output:
    """A checked output: standard output, a stream to write into, or a file to replace."""

    given: str
    path: Path | None  # the resolved target; None for standard output
    stream: bool  # write into it (stdout, character device, FIFO) instead of replacing it

    @property
    def is_stdout(self) -> bool:
        """True when the output goes to this process's standard output."""
        return self.path is None

    def __str__(self) -> str:
        return "standard output" if self.path is None else self.given

    def write_text(self, text: str) -> None:
        """Write `text` (UTF-8); OutputError if the system refuses."""
        self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        """Write `data`; OutputError if the system refuses."""
        try:
            if self.path is None:
                if STDOUT_CLOSED:
                    raise OutputError("-o -: standard output is closed")
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
            elif self.stream:
                with self.path.open("wb") as handle:
                    handle.write(data)
            else:
                write_bytes_atomic(self.path, data)
        except OSError as exc:
            raise OutputError(f"{self.given}: cannot write: {exc.strerror or exc}") from None


def output_file(given: str | Path, inputs: Iterable[Path] = (), option: str = "-o") -> Output:
    """Check `option given` (-o, --table) for a command that reads `inputs`; UsageError if
    writing there would destroy something or cannot be a file."""
    text = str(given)
    if text == STDOUT:
        return Output(text, None, True)
    if not text or text.endswith(os.sep):
        raise UsageError(f"{option} {text!r}: names a folder; give a file name (or - for stdout)")
    if Path(text).name.endswith((*REPORT_SUFFIXES, ".ncu.log")):
        raise UsageError(
            f"{option} {text}: is named like a report or an ncu log; give another name"
        )
    target = Path(os.path.realpath(text))  # follows symlinks: the link itself stays
    try:
        info = target.stat()
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise UsageError(f"{option} {text}: folder {target.parent} does not exist") from None
        return Output(text, target, False)
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot use it: {exc.strerror or exc}") from None
    kind = _kind(info.st_mode)
    if kind in ("character device", "FIFO"):
        return Output(text, target, True)
    if kind != "file":
        raise UsageError(
            f"{option} {text}: is a {kind}; give a file name (or - for standard output)"
        )
    _refuse_precious(f"{option} {text}", target, info, inputs)
    return Output(text, target, False)


def output_folder(given: str | Path) -> Path:
    """Check `-o given` for a command that writes a folder (capture): it must be a folder or
    not exist yet. `-o ''` (which Path reads as the current folder) and `-o -` (standard
    output for the commands that write a file) name no folder."""
    if str(given) in ("", "-"):
        raise UsageError(
            f"-o {str(given)!r}: capture writes a folder, not a stream; give the folder's path"
        )
    path = Path(given)
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:  # the manifest (JSON) and ncu's argv hold the folder's path
        shown = unicode_safe(str(given))
        raise UsageError(f"-o {shown}: the folder's path must be UTF-8 text") from None
    try:
        if path.is_symlink() and not path.exists():  # mkdir through it fails: "File exists"
            raise UsageError(
                f"-o {given}: a symbolic link to nothing (a loop, or its target is gone);"
                " give a folder"
            )
        target = Path(os.path.realpath(path))
        if target.exists() and not target.is_dir():
            kind = _kind(target.stat().st_mode)
            raise UsageError(
                f"-o {given}: is a {kind}, not a folder; give a folder for the capture"
            )
        if not target.exists():
            _check_parent(str(given), target)
    except OSError as exc:  # a name too long, a loop of links
        raise UsageError(f"-o {given}: cannot use it: {exc.strerror or exc}") from None
    return path


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def _check_parent(given: str, target: Path) -> None:
    """The nearest existing ancestor of a new path must be a folder (parents are created)."""
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"-o {given}: {parent} is not a folder")
            return


def _refuse_precious(
    given: str, target: Path, info: os.stat_result, inputs: Iterable[Path]
) -> None:
    """Refuse to replace an input of this command, a capture manifest or a report; `given` is
    the option and its value, as the user wrote them."""
    for item in inputs:
        try:
            other = item.stat()
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
            raise UsageError(f"{given}: is also an input ({item}); choose another output path")
    if target.name.endswith((*REPORT_SUFFIXES, ".ncu.log")):  # reached through a symlink
        raise UsageError(f"{given}: would overwrite an Nsight Compute report or log")
    if _is_manifest(target):
        raise UsageError(f"{given}: would overwrite a capture manifest")


def _is_manifest(path: Path) -> bool:
    """True for a capture's manifest.json (it holds `manifest_version`)."""
    if path.name != "manifest.json":
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return True  # unreadable: do not risk it
    return b'"manifest_version"' in head
