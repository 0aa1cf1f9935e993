"""The real program's kernel time per recorded call, measured while it is recorded.

torch.profiler (CUPTI) runs around the program; the recorder marks each call it sees with a
profiler range (`ncu_classify#N`). After the run every kernel is traced to the PyTorch op that
launched it (CUPTI's external correlation id) and from there to the innermost mark open on that
op's thread when it started; the recorder says what each mark stands for (a typed shape, a
device op, model building, or nothing: then its parent's). Memory copies and sets are not
kernels (ncu cannot profile them): their time is kept apart."""

from __future__ import annotations

import bisect
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from .warmup import WARMUP  # `record --start-at`'s range: its kernels are setup too

MARK = "ncu_classify#"
COMPILING = " (dynamo_timed)"  # the suffix of torch.compile's own profiler ranges
TUNING = -2  # kernel_times' key for kernels launched inside one: compile-time work


@dataclass
class KernelTime:
    """Kernels and their summed duration (ns), and apart from them the device's memory copies
    and sets (ncu profiles kernels only)."""

    kernels: int = 0
    ns: int = 0
    copy_ns: int = 0
    marks: int = 0  # marked calls it was summed over (where that is counted)
    names: dict[str, int] = field(default_factory=dict)  # kernel name -> launches

    def add(self, ns: int, kernels: int = 1, copy: bool = False, name: str = "") -> None:
        """One device event (`copy`: a memory copy or set), or a sum of kernels."""
        if copy:
            self.copy_ns += ns
        else:
            self.kernels += kernels
            self.ns += ns
            if name:
                self.names[name] = self.names.get(name, 0) + kernels

    def scaled(self, factor: float) -> KernelTime:
        """The same kernels, as many times over (`calls / timed calls`: per call unchanged)."""
        names = {name: round(count * factor) for name, count in self.names.items()}
        return KernelTime(
            round(self.kernels * factor), round(self.ns * factor), round(self.copy_ns * factor),
            self.marks, names,
        )  # fmt: skip

    def take(self, other: KernelTime) -> None:
        """Take away kernels now told to another target (the ops of a region's eager code)."""
        self.kernels -= other.kernels
        self.ns -= other.ns
        for name, count in other.names.items():
            left = self.names.get(name, 0) - count
            if left > 0:
                self.names[name] = left
            else:
                self.names.pop(name, None)

    def merge(self, other: KernelTime) -> None:
        self.kernels += other.kernels
        self.ns += other.ns
        self.copy_ns += other.copy_ns
        for name, count in other.names.items():
            self.names[name] = self.names.get(name, 0) + count


@dataclass
class Mark:
    """One marked call: the mark open around it (its parent) and what it stands for."""

    parent: int | None
    target: tuple[str, ...] | None = None  # None: its parent's


@dataclass(frozen=True)
class Launch:
    """One kernel of a watched mark (a compiled region's eager code), with the thread and start
    of the PyTorch op that launched it, so that the op can be named (`region_ops`)."""

    mark: int
    thread: int
    start: int
    ns: int
    name: str


@dataclass
class KernelClock:
    """Marks calls while torch.profiler runs (only when `enabled`: a CUDA device is there)."""

    enabled: bool
    marks: list[Mark] = field(default_factory=list)
    _open: list[tuple[int, Any]] = field(default_factory=list)
    _profiler: Any = None
    events: list[Any] = field(default_factory=list)
    broken: str | None = None  # why the measurement was lost (the program's own profiler)
    _guards: list[tuple[Any, str, Any]] = field(default_factory=list)
    _times: tuple[dict[int, KernelTime], KernelTime] | None = None  # attributed once
    launches: list[Launch] = field(default_factory=list)  # kernels of the watched marks
    results: Any = None  # the profiler's results (`region_ops` reads their event tree)

    def __enter__(self) -> KernelClock:
        if self.enabled:
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
            with warnings.catch_warnings():  # torch's note on profiler cycles: not the user's
                warnings.simplefilter("ignore", UserWarning)
                self._profiler = profile(
                    activities=activities, record_shapes=True, experimental_config=_config()
                )
                self._profiler.__enter__()
            self._guards = _refuse_other_profilers()
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in self._guards:
            setattr(owner, name, original)
        self._guards = []
        if self._profiler is None:
            return
        profiler, self._profiler = self._profiler, None
        try:
            torch.cuda.synchronize()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                profiler.__exit__(None, None, None)
            self.results = profiler.profiler.kineto_results  # (its event tree, when asked)
            self.events = list(self.results.events())
        except RuntimeError as exc:  # the program started and stopped a profiler of its own
            self.broken = " ".join(str(exc).split())[:200]
            self.events = []

    @property
    def measured(self) -> bool:
        """Whether kernel time was measured (a GPU, and no profiler of the program's own)."""
        return self.enabled and self.broken is None

    def begin(self) -> int:
        """Open a mark around the call about to run; -1 when not measuring."""
        if self._profiler is None:
            return -1
        number = len(self.marks)
        self.marks.append(Mark(self._open[-1][0] if self._open else None))
        scope = torch._C._profiler._RecordFunctionFast(f"{MARK}{number}")
        scope.__enter__()
        self._open.append((number, scope))
        return number

    def open_range(self, name: str) -> Any:
        """A profiler range named `name`, opened now (its `__exit__` closes it); None when not
        measuring."""
        if self._profiler is None:
            return None
        scope = torch._C._profiler._RecordFunctionFast(name)
        scope.__enter__()
        return scope

    def end(self, number: int, target: tuple[str, ...] | None = None) -> None:
        """Close mark `number`, saying what it stands for (None: whatever its parent does,
        unless `aim` says so later)."""
        if number < 0:
            return
        while self._open:  # (marks close in order; one left open by an exception closes too)
            open_number, scope = self._open.pop()
            scope.__exit__(None, None, None)
            if open_number == number:
                break
        self.aim(number, target)

    def aim(self, number: int, target: tuple[str, ...] | None) -> None:
        """Say what a mark (closed or open) stands for."""
        if number >= 0:
            self.marks[number].target = target

    def resolve(self, number: int | None) -> tuple[str, ...] | None:
        """What a mark stands for, asking its parents when it says nothing."""
        while number is not None:
            mark = self.marks[number]
            if mark.target is not None:
                return mark.target
            number = mark.parent
        return None

    def kernel_times(self) -> tuple[dict[int, KernelTime], KernelTime]:
        """Kernel time per innermost mark, and the kernels launched outside any mark (the
        shapes and the chains both read them: attributed once). The kernels of a compiled
        region's own mark (its eager code: no mark inside) are also kept one by one."""
        if self._times is None:
            watched = {n for n, m in enumerate(self.marks) if m.target and m.target[0] == REGION}
            self._times = attribute(self.events, watched, self.launches)
        return self._times


REGION = "region"  # the target of a compiled region's own mark: its eager code


def _config() -> Any:
    """The profiler's overload names (torch >= 2.7), so that an op's schema is known; None
    where this torch has no such option (the schemas are then matched by their arguments)."""
    from torch._C._profiler import _ExperimentalConfig

    try:
        return _ExperimentalConfig(capture_overload_names=True)
    except TypeError:
        return None


def attribute(
    events: Iterable[Any], watched: set[int] | None = None, launches: list[Launch] | None = None
) -> tuple[dict[int, KernelTime], KernelTime]:
    """Kernel (and copy) time per innermost mark from a profiler's events, and the time of
    those that fell outside every mark. A device event names, by correlation id, the PyTorch op
    or range it was launched from (the innermost one: CUPTI's external correlation); that op's
    start lies in the innermost mark open on its thread then. Kernels launched inside one of
    torch.compile's own ranges (`... (dynamo_timed)`: Inductor benchmarking a Triton kernel's
    configs at its first launch, compiling) are compile-time work, under `TUNING`, as are those
    of the program's warm-up (`record --start-at`: the `WARMUP` range). A kernel of
    a `watched` mark is also told to `launches`, with its op's thread and start."""
    marks: dict[int, list[tuple[int, int, int]]] = {}  # thread -> (start, end, number)
    compiling: dict[int, list[tuple[int, int, int]]] = {}  # thread -> torch.compile's ranges
    frontend: dict[int, tuple[int, int]] = {}  # correlation id -> (thread, start) of an op
    device: list[tuple[int, int, bool, str]] = []  # (linked correlation id, ns, copy, name)
    for event in events:
        name = event.name()
        if event.device_type() == torch._C._autograd.DeviceType.CPU:
            if name.startswith(MARK):
                marks.setdefault(event.start_thread_id(), []).append(
                    (event.start_ns(), event.end_ns(), int(name[len(MARK) :]))
                )
            elif name.endswith(COMPILING) or name == WARMUP:
                compiling.setdefault(event.start_thread_id(), []).append(
                    (event.start_ns(), event.end_ns(), TUNING)
                )
            if event.linked_correlation_id() == 0:
                frontend[event.correlation_id()] = (event.start_thread_id(), event.start_ns())
        elif not name.startswith(MARK) and not _annotation(event):
            copy = name.startswith(("Memcpy", "Memset"))
            device.append((event.linked_correlation_id(), event.duration_ns(), copy, name))
    per_mark: dict[int, KernelTime] = {}
    outside = KernelTime()
    finders = {thread: InnermostMark(spans) for thread, spans in marks.items()}
    tuners = {thread: InnermostMark(spans) for thread, spans in compiling.items()}
    for linked, ns, copy, name in device:
        thread, start = frontend.get(linked, (None, 0))
        finder = finders.get(thread) if thread is not None else None
        number = finder.at(start) if finder is not None else None
        tuner = tuners.get(thread) if thread is not None else None
        number = TUNING if tuner is not None and tuner.at(start) is not None else number
        time = outside if number is None else per_mark.setdefault(number, KernelTime())
        time.add(ns, copy=copy, name=name)
        if watched and number in watched and not copy and launches is not None:
            launches.append(Launch(number, thread or 0, start, ns, name))
    return per_mark, outside


def _annotation(event: Any) -> bool:
    """A device-side copy of a profiler range (a user's `record_function`), not device work."""
    flag = getattr(event, "is_user_annotation", None)
    return bool(flag()) if flag is not None else False


class InnermostMark:
    """The innermost of properly nested spans that holds a moment (spans of one thread)."""

    def __init__(self, spans: list[tuple[int, int, int]]) -> None:
        self.spans = sorted(spans, key=lambda s: (s[0], -s[1]))
        self.starts = [s[0] for s in self.spans]
        self.parents: list[int] = []  # index of each span's enclosing span, -1 for none
        stack: list[int] = []
        for index, (_, end, _) in enumerate(self.spans):
            while stack and self.spans[stack[-1]][1] < end:
                stack.pop()
            self.parents.append(stack[-1] if stack else -1)
            stack.append(index)

    def at(self, moment: int) -> int | None:
        """The number of the innermost span that holds `moment`: the latest-starting span
        before it, or the nearest of its enclosing spans that still holds it."""
        index = bisect.bisect_right(self.starts, moment) - 1
        while index >= 0:
            if self.spans[index][1] >= moment:
                return self.spans[index][2]
            index = self.parents[index]
        return None

    def chain(self, moment: int) -> list[int]:
        """The numbers of every span that holds `moment`, the innermost first."""
        index = bisect.bisect_right(self.starts, moment) - 1
        held: list[int] = []
        while index >= 0:
            if self.spans[index][1] >= moment:
                held.append(self.spans[index][2])
            index = self.parents[index]
        return held


PROFILER_TAKEN = (
    "record measures kernel time with torch.profiler, and the program starts a profiler of its"
    " own (only one can run): record it with --no-kernel-time"
)


def _refuse_other_profilers() -> list[tuple[Any, str, Any]]:
    """Make a profiler the program starts while record's runs fail at once, saying to record
    with --no-kernel-time, instead of breaking both measurements (Kineto runs one profiler at a
    time: the program's own `with profile()` ended in torch's "Can't disable Kineto profiler").
    Returns what to restore."""
    import torch.autograd.profiler as legacy
    import torch.profiler

    def refuse(*_: object, **__: object) -> None:
        raise RuntimeError(PROFILER_TAKEN)

    guards = [(torch.profiler.profile, "start"), (legacy.profile, "__enter__")]
    saved = [(owner, name, getattr(owner, name)) for owner, name in guards]
    for owner, name in guards:
        setattr(owner, name, refuse)
    return saved
