"""Standard output and error whose reader may leave: `ncu-classify ... | head`.

When the reader of a pipe is gone, what is still to be printed goes to /dev/null and the command
carries on, so that it ends with its own exit code (4 for an unreadable report, 8 for a gate)
instead of an error about a reader that left on purpose.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Forgiving:
    """A stream that, on a broken pipe, points its file descriptor at /dev/null and goes on."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return int(self._stream.write(data))
        except BrokenPipeError:
            self._drop()
            return len(data)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    @property
    def buffer(self) -> _Forgiving:
        """The binary stream under a text one, just as forgiving."""
        return _Forgiving(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _drop(self) -> None:
        """Send this stream's descriptor to /dev/null: the reader has gone."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)


class ClosedStream(io.TextIOBase):
    """Standard output the process was started without (`>&-`): every write fails as a
    closed descriptor does, so that a command that prints its result ends as on /dev/full
    (exit 7, one line), instead of succeeding with its output lost."""

    def writable(self) -> bool:
        """Writes are accepted, to fail: what was printed is lost."""
        return True

    def write(self, data: Any) -> int:
        """Nothing is written: OSError (EBADF)."""
        raise OSError(errno.EBADF, "standard output is closed")

    @property
    def buffer(self) -> ClosedStream:
        """The binary stream under it: closed as well."""
        return self


def open_std_streams() -> None:
    """Standard streams the process was started without: stdout fails every write
    (`ClosedStream`), stderr goes to /dev/null (errors cannot be shown; exit codes still
    tell)."""
    if sys.stdout is None:
        sys.stdout = ClosedStream()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115


@contextmanager
def forgiving_std_streams() -> Iterator[None]:
    """stdout and stderr that outlive their readers while the block runs, flushed at its end."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Forgiving(saved[0]), _Forgiving(saved[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved
