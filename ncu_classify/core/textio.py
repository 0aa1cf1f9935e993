"""Read user text files (YAML, JSON) with bounded work and one-line errors.

A path may name anything: a folder, a device that never ends (/dev/zero), a FIFO, a file in
another encoding. Reading stops one byte past the size cap, and bytes that are not UTF-8 are
reported with their line and column, so that no input turns into a traceback or a hang on
memory.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from .errors import InputFileError, NcuClassifyError

MIB = 1 << 20


_KINDS = (
    (stat.S_ISDIR, "Is a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe), not a regular file"),
    (stat.S_ISSOCK, "a socket, not a regular file"),
    (stat.S_ISCHR, "a character device, not a regular file"),
    (stat.S_ISBLK, "a block device, not a regular file"),
)


def not_regular(mode: int) -> str | None:
    """Why a file of `mode` is no input file (a folder, a FIFO, a device...), or None."""
    if stat.S_ISREG(mode):
        return None
    return next((why for test, why in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, error: type[NcuClassifyError]) -> BinaryIO:
    """`path` opened for reading if it is a regular file (links followed), else `error`
    naming it: a FIFO, socket or device is refused without blocking (opening a FIFO with no
    writer would hang, a device can be endless), a folder, dangling link or unreadable file
    with the reason. The one check of every input file this tool reads."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{path}: cannot read: {os_reason(path, exc)}") from None
    why = not_regular(os.fstat(fd).st_mode)
    if why is not None:
        os.close(fd)
        raise error(f"{path}: cannot read: {why}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def check_regular(paths: list[Path], error: type[NcuClassifyError]) -> None:
    """Refuse, before any work, the first of `paths` that is not a readable regular file."""
    for path in paths:
        open_regular(path, error).close()


def os_reason(path: Path, exc: OSError) -> str:
    """The reason of an OSError, naming a dangling symbolic link and a file that cannot be
    opened for its kind (a socket gives ENXIO) as such."""
    if isinstance(exc, FileNotFoundError) and path.is_symlink():
        return "a symbolic link to a file or folder that does not exist"
    try:
        kind = not_regular(os.stat(path).st_mode)
    except OSError:
        kind = None
    return kind or exc.strerror or str(exc)


def read_text(path: Path, error: type[InputFileError], max_bytes: int) -> str:
    """The UTF-8 text of `path` (a leading BOM dropped), or `error` saying why not in one line."""
    return decode_text(path, read_bytes(path, error, max_bytes), error)


def read_bytes(path: Path, error: type[InputFileError], max_bytes: int) -> bytes:
    """The bytes of `path`, at most `max_bytes`, or `error` saying why not in one line."""
    try:
        with open_regular(path, error) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"{path}: larger than {_size(max_bytes)}; not a file this tool reads")
    return data


def decode_text(path: Path, data: bytes, error: type[InputFileError]) -> str:
    """`data` (read from `path`) as UTF-8 text, a leading BOM dropped; bytes that are not UTF-8
    are `error` naming their line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = line_col(data, exc.start)
        raise error(
            f"{path}:{line}:{col}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file"
            " as UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def line_col(data: bytes | str, offset: int) -> tuple[int, int]:
    """1-based line and column of `offset` in `data`."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    before = data[:offset]
    line = before.count(newline) + 1  # type: ignore[arg-type]
    col = offset - (before.rfind(newline) + 1) + 1  # type: ignore[arg-type]
    return line, col


def read_json(path: Path, error: type[InputFileError], max_bytes: int) -> Any:
    """The JSON value of `path`; NaN, Infinity (Python's extension) and numbers too large for
    a float (1e400) read as null, i.e. missing, never as a number. Problems are one `error`
    line with the line and column."""
    text = read_text(path, error, max_bytes)
    try:
        return json.loads(
            text, parse_constant=lambda _: None, parse_float=_finite, parse_int=_bounded_int
        )
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to read") from None


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _bounded_int(text: str) -> int | float | None:
    """An integer, or its float value when it has more digits than any count we write (the
    digit limit of int() and float overflow stay out of reach)."""
    digits = text.lstrip("-")
    return int(text) if len(digits) <= 18 else _finite(text)


def _size(count: int) -> str:
    return f"{count // MIB} MiB" if count % MIB == 0 else f"{count >> 10} KiB"
