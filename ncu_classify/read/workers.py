"""A process pool that cannot deadlock on shutdown: one forked child per task, killed with SIGKILL.

multiprocessing.Pool stops its workers with one SIGTERM and then waits for them forever. A
worker that inherits a caught SIGTERM (any Python handler in the parent) and receives it in the
instant after fork loses it (CPython clears pending signal flags in the child) and blocks on the
task queue for good: the suite hung that way. Here each task runs in a child forked for it, which
sends its result down a pipe and leaves with os._exit; the parent reads every pipe before
reaping, and on any way out (an exception, Ctrl-C) kills the children it still has with
SIGKILL, which no handler can catch, and reaps them. A child that dies without a result (a
segfault in a native reader, SIGKILL from the OOM killer) is reported as such, never waited on.

A task that returns an iterator streams it: each item goes down the pipe as its own pickled
frame as soon as it is made, and the parent unpickles it on arrival while the children still
work (unpickling every child's result at the end, when they all finish together, was a tenth
of a 16-process classify of one large report); the task's result is then the list of items.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import selectors
import signal
import struct
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Generic, TypeVar, cast

T = TypeVar("T")
R = TypeVar("R")
_LENGTH = struct.Struct("<Q")  # each frame: its length, then a pickled (kind, value)


@dataclass(frozen=True)
class WorkerFailure:
    """A task whose child ended without a result: why, in one line."""

    reason: str


@dataclass
class _Child(Generic[T]):
    pid: int
    index: int
    task: T
    pending: bytearray = field(default_factory=bytearray)  # bytes of an unfinished frame
    frames: list[tuple[str, object]] = field(default_factory=list)  # unpickled on arrival

    def take(self, data: bytes) -> None:
        """Add bytes from the pipe; unpickle every frame they complete."""
        self.pending += data
        start = 0
        while len(self.pending) - start >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(self.pending, start)
            end = start + _LENGTH.size + size
            if end > len(self.pending):
                break
            with memoryview(self.pending) as view:  # released before the buffer shrinks
                self.frames.append(pickle.loads(view[start + _LENGTH.size : end]))
            start = end
        del self.pending[:start]


def _child_main(fn: Callable[[T], R], task: T, write_fd: int) -> None:
    """In the child: default signal dispositions, run the task, send the result (an iterator's
    items frame by frame), leave."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C for us
        faulthandler.disable()  # a crash is reported by the parent, in one line
        with os.fdopen(write_fd, "wb") as pipe:
            try:
                result = fn(task)
                if isinstance(result, Iterator):
                    for item in result:
                        _send(pipe, "item", item)
                    _send(pipe, "items", None)
                else:
                    _send(pipe, "ok", result)
            except BaseException as exc:  # sent to the parent as one line
                line = traceback.format_exception_only(type(exc), exc)[-1].strip()
                _send(pipe, "error", line)
        code = 0
    finally:
        os._exit(code)


def _send(pipe: IO[bytes], kind: str, value: object) -> None:
    """One frame down the pipe: its length, then the pickled (kind, value)."""
    data = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_LENGTH.pack(len(data)))
    pipe.write(data)
    pipe.flush()  # now: the parent unpickles it while this child goes on


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else ""
        return f"died of signal {number}" + (f" ({name})" if name else "")
    return f"exited with code {os.waitstatus_to_exitcode(status)} without a result"


def _start(fn: Callable[[T], R], index: int, task: T) -> tuple[_Child[T], int]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(read_fd)
        _child_main(fn, task, write_fd)
    os.close(write_fd)
    return _Child(pid, index, task), read_fd


def _result(child: _Child[T], status: int) -> R | WorkerFailure:
    """What the child sent: its result, the list of its items, or why there is none."""
    frames = child.frames
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and frames and not child.pending:
        kind, value = frames[-1]
        if kind == "ok":
            return cast(R, value)
        if kind == "items":
            return cast(R, [item for _, item in frames[:-1]])
        if kind == "error":
            return WorkerFailure(str(value))
    # died, or left in the middle of its items (os._exit(0) deep in native code)
    return WorkerFailure(f"worker process {_describe_exit(status)}")


def run_in_children(
    fn: Callable[[T], R], tasks: Sequence[T], jobs: int
) -> Iterator[tuple[int, R | WorkerFailure]]:
    """Yield (task index, result or WorkerFailure) as children finish, at most `jobs` at once;
    the result of a task that returns an iterator is the list of its items.

    The caller must not run other threads (fork copies only the calling thread). Leaving the
    iteration early, or any exception, kills and reaps every child still running.
    """
    pending = list(enumerate(tasks))
    pending.reverse()
    running: dict[int, _Child[T]] = {}
    selector = selectors.DefaultSelector()
    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                index, task = pending.pop()
                child, fd = _start(fn, index, task)
                running[fd] = child
                selector.register(fd, selectors.EVENT_READ)
            for key, _ in selector.select():
                fd = int(key.fd)
                data = os.read(fd, 1 << 20)
                if data:
                    running[fd].take(data)
                    continue
                selector.unregister(fd)
                os.close(fd)
                child = running.pop(fd)
                _, status = os.waitpid(child.pid, 0)
                yield child.index, _result(child, status)
    finally:
        for fd, child in running.items():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
            os.close(fd)
        selector.close()
