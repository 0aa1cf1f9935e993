"""The program's other threads. Torch modes are per thread, so the recorder sees the thread
that runs the program only; each thread the program starts (through `threading`) while it is
recorded gets a dispatch mode of its own that counts the device ops it runs, by stage and op,
so that they are listed as uncovered work, "not seen", instead of being missed silently (on a
CPU nothing else would show them: coverage by calls would read 100 %)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from .calls import CallKwargs
from .device_ops import does_work, op_name, touches_tensors

WHY = "run in another thread: record sees only the thread that runs the program"


class OtherThreads:
    """`with OtherThreads(where):` around the program; then `calls`: (stage, op) -> the device
    op calls made in threads started meanwhile (`where` gives the stage of the code running)."""

    def __init__(self, where: Callable[[], tuple[str, str]]) -> None:
        self.where = where
        self.calls: dict[tuple[str, str], int] = {}
        self.active = False
        self._lock = threading.Lock()
        self._previous: Any = None
        self.flow: Any = None  # the recording's dataflow: what these threads make is theirs
        self.warming: Callable[[], bool] = lambda: False  # the program's warm-up runs

    def __enter__(self) -> OtherThreads:
        self.active = True
        self._previous = threading.getprofile()
        threading.setprofile(self._started)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            threading.setprofile(self._previous)
        self.active = False  # a thread that outlives the recording counts no more

    def _started(self, frame: Any, event: str, arg: Any) -> None:
        """The first event of a new thread: from now on its device ops are counted."""
        sys.setprofile(self._previous)
        if self.active:
            _Counting(self).__enter__()  # (for the thread's life; it ends with the thread)

    def count(self, func: Any) -> None:
        """One call of the op `func` in the code running now (not in the warm-up)."""
        if self.warming():
            return
        key = (self.where()[0], op_name(func))
        with self._lock:
            self.calls[key] = self.calls.get(key, 0) + 1

    @property
    def total(self) -> int:
        """The device-op calls counted in every other thread."""
        return sum(self.calls.values())


def joined(before: set[threading.Thread]) -> None:
    """Wait for the non-daemon threads started since `before`, as `python` does when a program
    ends (before its atexit functions); an executor's idle workers are let go first, as
    concurrent.futures does at exit."""
    while True:
        waiting = [
            t
            for t in threading.enumerate()
            if t not in before and not t.daemon and t is not threading.current_thread()
        ]
        if not waiting:
            return
        for thread in waiting:
            _let_go(thread)
            thread.join()


def _let_go(thread: threading.Thread) -> None:
    """A ThreadPoolExecutor worker waits for work until its executor shuts down: shut it down
    without waiting (the work queued is still done), as concurrent.futures does at exit."""
    from concurrent.futures import thread as pool

    if thread not in getattr(pool, "_threads_queues", {}):
        return
    reference = next(iter(getattr(thread, "_args", ())), None)
    executor = reference() if callable(reference) else None
    if isinstance(executor, pool.ThreadPoolExecutor):
        executor.shutdown(wait=False)


class _Counting(TorchDispatchMode):
    """Counts the device ops of one thread while the recording lasts."""

    def __init__(self, threads: OtherThreads) -> None:
        super().__init__()
        self.threads = threads

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: CallKwargs | None = None,
    ) -> Any:
        """Run the op; count it when it may do device work on a tensor."""
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if self.threads.active and does_work(func) and touches_tensors(args, kwargs, result):
            self.threads.count(func)
            if self.threads.flow is not None:
                self.threads.flow.foreign(result)
        return result
