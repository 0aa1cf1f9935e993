"""A process pool that cannot deadlock on shutdown: one forked child per task, killed with SIGKILL.

multiprocessing.Pool stops its workers with one SIGTERM and then waits for them forever. A
worker that inherits a caught SIGTERM (any Python handler in the parent) and receives it in the
instant after fork loses it (CPython clears pending signal flags in the child) and blocks on the
task queue for good: the suite hung that way. Here each task runs in a child forked for it, which
sends one pickled result down a pipe and leaves with os._exit; the parent reads every pipe
before reaping, and on any way out (an exception, Ctrl-C) kills the children it still has with
SIGKILL, which no handler can catch, and reaps them. A child that dies without a result (a
segfault in a native reader, SIGKILL from the OOM killer) is reported as such, never waited on.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import selectors
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class WorkerFailure:
    """A task whose child ended without a result: why, in one line."""

    reason: str


@dataclass
class _Child(Generic[T]):
    pid: int
    index: int
    task: T
    chunks: list[bytes] = field(default_factory=list)


def _child_main(fn: Callable[[T], R], task: T, write_fd: int) -> None:
    """In the child: default signal dispositions, run the task, send the result, leave."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C for us
        faulthandler.disable()  # a crash is reported by the parent, in one line
        try:
            payload = pickle.dumps(("ok", fn(task)), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # sent to the parent as one line
            line = traceback.format_exception_only(type(exc), exc)[-1].strip()
            payload = pickle.dumps(("error", line))
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(payload)
        code = 0
    finally:
        os._exit(code)


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
    data = b"".join(child.chunks)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and data:
        kind, value = pickle.loads(data)
        return value if kind == "ok" else WorkerFailure(str(value))
    return WorkerFailure(f"worker process {_describe_exit(status)}")


def run_in_children(
    fn: Callable[[T], R], tasks: Sequence[T], jobs: int
) -> Iterator[tuple[int, R | WorkerFailure]]:
    """Yield (task index, result or WorkerFailure) as children finish, at most `jobs` at once.

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
                    running[fd].chunks.append(data)
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
