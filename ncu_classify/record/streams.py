"""The program's standard streams, lent to it and taken back: what it does to them (close
`sys.stdout` or `sys.stderr`, close or redirect descriptors 1 and 2) ends with it, so that
record still writes the shapes file and says what it recorded, on the streams it started
with, and ends with its own exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

STREAMS = ("stdout", "stderr", "__stdout__", "__stderr__")


class _Lent:
    """A standard stream as the program sees it: its `close()` closes this view only (later
    writes fail as on a closed file, as they would in `python`), not the stream under it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._closed = False
        self._buffer: _Lent | None = None

    @property
    def closed(self) -> bool:
        """True once the program closed it, or its buffer (or the stream under it is closed)."""
        below = self._buffer is not None and self._buffer.closed
        return self._closed or below or bool(getattr(self._stream, "closed", False))

    @property
    def buffer(self) -> _Lent:
        """The binary stream under a text one, lent as well (closing it closes the view)."""
        if self._buffer is None:
            self._buffer = _Lent(self._stream.buffer)
        return self._buffer

    def detach(self) -> _Lent:
        """The lent buffer; this view is unusable after, as a detached text stream is."""
        buffer = self.buffer
        self.close()
        return buffer

    def close(self) -> None:
        """Flushed, then closed for the program."""
        if not self._closed:
            with suppress(OSError, ValueError):
                self._stream.flush()
        self._closed = True

    def write(self, data: Any) -> int:
        """Written through, or ValueError once closed."""
        self._open()
        return int(self._stream.write(data))

    def flush(self) -> None:
        """Flushed through, or ValueError once closed."""
        self._open()
        self._stream.flush()

    def fileno(self) -> int:
        """The descriptor under it, or ValueError once closed."""
        self._open()
        return int(self._stream.fileno())

    def _open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def lent_streams() -> Iterator[Any]:
    """sys.stdout, sys.stderr (and sys.__stdout__, sys.__stderr__) lent to the program in the
    block, descriptors 1 and 2 kept (duplicated); the block gets a function that takes them
    back (flushes what the program printed, puts the objects and descriptors back), which is
    also called at its end."""
    saved = {name: getattr(sys, name) for name in STREAMS}
    fds: dict[int, int] = {}
    for fd in (1, 2):
        with suppress(OSError):  # (a process started without it: nothing to put back)
            fds[fd] = os.dup(fd)

    def taken_back() -> None:
        for name in STREAMS:
            lent = getattr(sys, name)
            if isinstance(lent, _Lent) and not lent.closed:
                with suppress(OSError, ValueError):
                    lent.flush()
            setattr(sys, name, saved[name])
        for fd, copy in fds.items():
            with suppress(OSError):
                os.dup2(copy, fd)

    for name, stream in saved.items():
        if stream is not None:
            setattr(sys, name, _Lent(stream))
    try:
        yield taken_back
    finally:
        taken_back()
        for copy in fds.values():
            os.close(copy)
