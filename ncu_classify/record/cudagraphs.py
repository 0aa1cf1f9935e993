"""CUDA graphs, as record sees them (issue 40, item 2). While recording, `torch.cuda.CUDAGraph`
is wrapped: the calls made while a graph is being captured launch nothing (they are recorded
into the graph) and are not counted as calls of their own: they are kept as what the graph
holds; each replay is marked for the kernel clock, so the kernels it launches (as one graph
launch) are the graph's, timed as replayed and counted once, as uncovered work whose cause
names the calls captured into it. A replay inside a compiled region (Inductor's
reduce-overhead) is the region's. The wrappers call torch's own methods first and never let
their bookkeeping fail the program."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .timing import KernelTime

CAUGHT = "(CUDA graph {number}, captured in {where})"


@dataclass
class CapturedGraph:
    """One graph: where it was captured, the calls captured into it (shape or op key ->
    calls), and how often it was replayed."""

    number: int
    stage: str
    where: str
    captured: dict[str, int] = field(default_factory=dict)
    replays: int = 0
    attributed: bool = False  # its time was spread over its shapes (`CudaGraphs.attribute`)
    kernel_ns: int | None = None  # its replays' kernel time, when measured


@dataclass
class CudaGraphs:
    """`torch.cuda.CUDAGraph` wrapped for one recording (see the module docstring)."""

    recorder: Any  # the Recorder (record.recorder, which imports this module)
    graphs: dict[int, CapturedGraph] = field(default_factory=dict)  # by id of the CUDAGraph
    _before: dict[int, dict[str, int]] = field(default_factory=dict)  # counts at capture start
    _saved: list[tuple[str, Callable[..., Any]]] = field(default_factory=list)
    _inputs_dir: Any = None  # the recorder's, while a capture runs

    def __enter__(self) -> CudaGraphs:
        if torch.cuda.is_available():
            owner = torch.cuda.CUDAGraph
            for name, wrap in (
                ("capture_begin", self._wrap_begin), ("capture_end", self._wrap_end),
                ("replay", self._wrap_replay),
            ):  # fmt: skip
                self._saved.append((name, getattr(owner, name)))
                setattr(owner, name, wrap(getattr(owner, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved:
            setattr(torch.cuda.CUDAGraph, name, original)
        self._saved = []

    def _wrap_begin(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
            _quietly(self.begin, id(graph))
            return original(graph, *args, **kwargs)

        return capture_begin

    def _wrap_end(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def capture_end(graph: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(graph, *args, **kwargs)
            _quietly(self.end, id(graph))
            return result

        return capture_end

    def _wrap_replay(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def replay(graph: Any, *args: Any, **kwargs: Any) -> Any:
            caught = self.graphs.get(id(graph))
            if caught is None or self.recorder.regions._calling or self.recorder.warming:
                return original(graph, *args, **kwargs)  # a region's (its mark), the warm-up's
            caught.replays += 1
            clock = self.recorder.clock
            mark = clock.begin()
            try:
                return original(graph, *args, **kwargs)
            finally:
                clock.end(mark, ("cudagraph", str(caught.number)))

        return replay

    def counts(self) -> dict[str, int]:
        """The calls of every shape and device op recorded so far."""
        found = {f"shape {k}": e.calls for k, e in self.recorder.recording.entries.items()}
        found |= {f"op {k}": op.calls for k, op in self.recorder.device_ops.ops.items()}
        return found

    def begin(self, graph: int) -> None:
        """A capture starts: the counts it will take back; no input is saved while it runs
        (a copy to the host is not allowed in a capture)."""
        if not self.recorder.regions._calling:
            self._before[graph] = self.counts()
            self._inputs_dir, self.recorder.inputs_dir = self.recorder.inputs_dir, None

    def end(self, graph: int) -> None:
        """A capture ended: the calls made during it are the graph's, not calls of their own."""
        before = self._before.pop(graph, None)
        if before is None:
            return
        self.recorder.inputs_dir = self._inputs_dir
        stage, where = self.recorder.where()
        caught = CapturedGraph(len(self.graphs), stage, where or "(no module)")
        rec = self.recorder
        for key, calls in self.counts().items():
            taken = calls - before.get(key, 0)
            if taken <= 0:
                continue
            caught.captured[key] = taken
            kind, name = key.split(" ", 1)
            held = rec.recording.entries[name] if kind == "shape" else rec.device_ops.ops[name]
            held.calls -= taken
        self.graphs[graph] = caught

    def finish(self) -> None:
        """Shapes and ops made only inside captures hold no call of their own: dropped (the
        graph's line names them)."""
        rec = self.recorder
        for key in [k for k, e in rec.recording.entries.items() if e.calls <= 0]:
            del rec.recording.entries[key]
        for key in [k for k, op in rec.device_ops.ops.items() if op.calls <= 0]:
            del rec.device_ops.ops[key]

    def held(self, key: str) -> Any:
        """The shape entry or device op a captured key names; None once dropped."""
        kind, name = key.split(" ", 1)
        held = self.recorder.recording.entries if kind == "shape" else self.recorder.device_ops.ops
        return held.get(name)

    def attribute(self, times: dict[tuple[str, ...], KernelTime] | None) -> None:
        """Each replayed graph's kernels and time, spread over the calls captured into it by
        their eager time per call: each shape or op gains the graph's calls of it (captured x
        replays) and its share, so the replays are covered and counted once. Only when the
        calls seen outside the graph account for every kernel it launched (by name): a call
        made only inside the capture that launched one leaves the graph uncovered."""
        for caught in self.graphs.values():
            graph = times.get(("cudagraph", str(caught.number))) if times else None
            if times is None or graph is None or not caught.replays:
                continue
            caught.kernel_ns = graph.ns
            weights: dict[str, tuple[Any, KernelTime]] = {}
            for key, taken in caught.captured.items():
                held = self.held(key)
                if held is not None and held.calls > 0:  # else made only inside the capture
                    own = times.get(tuple(key.split(" ", 1))) or KernelTime()
                    weights[key] = (held, own.scaled(taken / held.calls))
            if _accounted(graph, [w for _, w in weights.values()], caught.replays):
                caught.attributed = _spread(graph, weights, caught, times)

    def notes(self, names: dict[tuple[str, str], str]) -> list[Any]:
        """The replayed graphs as the recording's notes, their calls named by the group id
        of their shape (`names`, from the document)."""
        from ..shapes.recorded import CudaGraphNote

        notes = []
        for caught in self.graphs.values():
            captured: dict[str, int] = {}
            for key, calls in caught.captured.items():
                kind, name = key.split(" ", 1)
                label = names.get((kind, name), f"{kind} (dropped: no eager call)")
                captured[label] = captured.get(label, 0) + calls
            ns = caught.kernel_ns
            notes.append(CudaGraphNote(
                number=caught.number, stage=caught.stage, where=caught.where,
                replays=caught.replays, captured=dict(sorted(captured.items())),
                kernel_us=round(ns / 1000, 3) if ns is not None else None,
                attributed=caught.attributed,
            ))  # fmt: skip
        return notes

    def uncovered(self, times: dict[tuple[str, ...], Any] | None) -> list[Any]:
        """Each replayed graph not attributed to its shapes, as uncovered work: its replays,
        its kernels and time."""
        from .totals import uncovered_item

        items = []
        for caught in self.graphs.values():
            if not caught.replays or caught.attributed:
                continue
            held = sum(caught.captured.values())
            why = (
                f"replayed from a CUDA graph (its kernels launch as one graph, timed as"
                f" replayed): it holds {held} calls captured into it, of"
                f" {len(caught.captured)} shapes and ops, not counted as calls of their own;"
                f" some of its kernels come from calls made only inside the graph, so its"
                f" time is not spread over them"
            )
            time = times.get(("cudagraph", str(caught.number))) if times is not None else None
            name = CAUGHT.format(number=caught.number, where=caught.where)
            items.append(uncovered_item(caught.stage, name, why, caught.replays, time, times))
        return items


def _accounted(graph: KernelTime, weights: list[KernelTime], replays: int) -> bool:
    """Whether the calls seen eagerly launch, per replay, every kernel the graph launched: each
    of its kernel names, as often (by count where no names were kept)."""
    if not graph.names:
        return graph.kernels / replays <= sum(w.kernels for w in weights) + 0.5
    known: dict[str, int] = {}
    for weight in weights:
        for name, count in weight.names.items():
            known[name] = known.get(name, 0) + count
    return all(count / replays <= known.get(name, 0) + 0.5 for name, count in graph.names.items())


def _spread(
    graph: KernelTime,
    weights: dict[str, tuple[Any, KernelTime]],
    caught: CapturedGraph,
    times: dict[tuple[str, ...], KernelTime],
) -> bool:
    """Gives each captured call its share of the graph's measured time (by its eager time per
    call, the kernels by its eager kernels per call; the last takes the rounding), and its
    calls (captured x replays). False when no captured call launched anything eagerly."""
    total_ns = sum(w.ns for _, w in weights.values())
    total_kernels = sum(w.kernels for _, w in weights.values())
    if total_ns <= 0 or total_kernels <= 0:
        return False
    left_ns, left_kernels, left_copy = graph.ns, graph.kernels, graph.copy_ns
    for number, (key, (held, weight)) in enumerate(weights.items()):
        last = number == len(weights) - 1
        ns = left_ns if last else round(graph.ns * weight.ns / total_ns)
        kernels = left_kernels if last else round(graph.kernels * weight.kernels / total_kernels)
        copy = left_copy if last else round(graph.copy_ns * weight.ns / total_ns)
        left_ns, left_kernels, left_copy = left_ns - ns, left_kernels - kernels, left_copy - copy
        share = KernelTime(kernels, ns, copy)
        share.names = {n: c * caught.replays for n, c in weight.names.items()}
        times.setdefault(tuple(key.split(" ", 1)), KernelTime()).merge(share)
        held.calls += caught.captured[key] * caught.replays
    return True


def _quietly(step: Callable[[int], None], graph: int) -> None:
    """A step of the bookkeeping that must never fail the program's capture: on an error the
    graph is left out (its replays then fall outside every call, as without the wrapper)."""
    with contextlib.suppress(Exception):  # recording must never break the user's program
        step(graph)
