"""The code a compiled region ran eagerly, op by op (issue 40). Its calls run with the
recorder's modes set aside (a dispatch mode would make dynamo recompile or skip the frame), so
what dynamo runs eagerly between the region's graphs (a graph break's code, a frame it skipped,
a block past its recompile limit) is seen only by torch.profiler. Each kernel of a region's own
mark is traced to the ATen op that launched it, and up to the outermost op around that one
which the profile describes whole (`profiled_calls`): that op is an `aten` shape of the stage,
with its calls, kernels and time; the kernels of ops it cannot describe stay the region's
uncovered eager work, which then names those ops."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from ..shapes.aten import UNKEPT_NUMBER
from .device_ops import why_not_replayed
from .profiled_calls import Lost, OpEvent, ProfiledCall, described, meta, typed
from .shapes_document import CallShape
from .timing import InnermostMark, KernelClock, KernelTime, Launch
from .totals import RegionCalls, eager_work, per_call


@dataclass
class EagerOp:
    """One distinct op of a region's eager code, and the kernels its calls launched."""

    stage: str
    region: str
    call: ProfiledCall
    time: KernelTime = field(default_factory=KernelTime)
    seen: set[tuple[int, int]] = field(default_factory=set)  # (thread, op number): its calls


Spans = list[tuple[int, int, int]]  # (start, end, number) of one thread's ATen ops


@dataclass
class RegionOps:
    """The ops of every region's eager code, and per region the ops it could not describe."""

    ops: dict[str, EagerOp] = field(default_factory=dict)
    lost: dict[tuple[str, ...], dict[str, set[tuple[int, int]]]] = field(default_factory=dict)
    broken: str | None = None  # why the profile could not be read op by op (nothing moved)

    def shapes(self) -> dict[str, list[CallShape]]:
        """The ops as shapes per stage, with their real time per call: a conv, linear, attention
        or cast as the typed shape the recorder writes for it eagerly, any other as `aten`."""
        stages: dict[str, list[CallShape]] = {}
        for op in self.ops.values():
            calls = len(op.seen)
            shape: CallShape = typed(op.call) or {
                "op": "aten", "overload": op.call.overload, "args": op.call.args,
                **({"kwargs": op.call.kwargs} if op.call.kwargs else {}),
            }  # fmt: skip
            if op.call.note:
                shape["note"] = op.call.note
            shape.update({"calls": calls, "source": op.region, "real_calls": calls})
            shape.update(per_call(op.time, calls, True))
            stages.setdefault(op.stage, []).append(shape)
        return stages

    def work(
        self, regions: RegionCalls, times: dict[tuple[str, ...], KernelTime] | None
    ) -> list[Any]:
        """The regions' eager work left uncovered (`totals.eager_work`), naming the ops the
        profile could not describe."""
        return eager_work(regions, times, self.said)

    def said(self, target: tuple[str, ...]) -> str:
        """`; ops the profile does not describe: aten::index x4` for a region's eager work (or
        why the profile could not be read op by op)."""
        if self.broken is not None:
            return f"; its ops could not be read from the profile: {self.broken}"
        lost = self.lost.get(target)
        if not lost:
            return ""
        ranked = sorted(lost, key=lambda n: (-len(lost[n]), n))
        told = ", ".join(f"{name} x{len(lost[name])}" for name in ranked[:4])
        return f"; ops the profile does not describe: {told}"


def region_ops(clock: KernelClock, times: dict[tuple[str, ...], KernelTime] | None) -> RegionOps:
    """Each region's eager kernels told to the ops that launched them; what moves to an op is
    taken from the region's eager time in `times`. Should the profile not read as expected (a
    torch without the fields), nothing moves and the region's eager work says why: recording
    never fails on it."""
    if times is None or not clock.launches:
        return RegionOps()
    try:
        found, moves = _traced(clock, times)
    except Exception as exc:  # (the user's recording must not be lost to it)
        return RegionOps(broken=" ".join(f"{type(exc).__name__}: {exc}".split())[:200])
    for target, moved in moves:
        times[target].take(moved)
    return found


def _traced(
    clock: KernelClock, times: dict[tuple[str, ...], KernelTime]
) -> tuple[RegionOps, list[tuple[tuple[str, ...], KernelTime]]]:
    """The ops of the regions' eager code, and the kernel time each region gives up to them."""
    found = RegionOps()
    moves: list[tuple[tuple[str, ...], KernelTime]] = []
    ops = _aten_ops(clock.events, {launch.thread for launch in clock.launches})
    finders = {thread: InnermostMark(spans) for thread, (spans, _) in ops.items()}
    chains: list[tuple[Launch, tuple[str, ...], list[int]]] = []
    for launch in clock.launches:
        target = clock.marks[launch.mark].target
        if target is not None and target in times and launch.thread in finders:
            chains.append((launch, target, finders[launch.thread].chain(launch.start)))
    wanted = {ops[x.thread][1][n].correlation_id() for x, _, chain in chains for n in chain}
    nodes = _tree_nodes(clock.results, wanted)
    made: dict[tuple[int, int], OpEvent] = {}  # an op read from its event once, when needed

    def op_of(thread: int, number: int) -> OpEvent:
        if (thread, number) not in made:
            event = ops[thread][1][number]
            made[(thread, number)] = OpEvent.of(event, nodes.get(event.correlation_id()))
        return made[(thread, number)]

    described_at: dict[tuple[int, int], tuple[int, ProfiledCall] | None] = {}
    dtypes: dict[tuple[str, ...], Counter[str]] = {}
    for launch, target, chain in chains:
        counts = dtypes.setdefault(target, Counter())
        for number in chain:
            counts.update(op_of(launch.thread, number).tensor_dtypes())
    doubles = {(x.thread, chain[0]) for x, _, chain in chains if chain and "double" in x.name}
    for launch, target, chain in chains:
        common = dtypes[target].most_common(1)
        fill = common[0][0] if common else None
        where = (launch.thread, chain[0] if chain else -1)
        if where not in described_at:
            events = [op_of(launch.thread, number) for number in chain]
            described_at[where] = _outermost(events, chain, fill, where not in doubles)
        chosen = described_at[where]
        if chosen is None:
            name = op_of(*where).name if chain else "(no ATen op)"
            lost = found.lost.setdefault(target, {}).setdefault(name, set())
            lost.add(where)
            continue
        number, call = chosen
        key = json.dumps([target[1], call.overload, call.args, call.kwargs], sort_keys=True)
        op = found.ops.setdefault(key, EagerOp(target[1], _region(target), call))
        op.time.add(launch.ns, name=launch.name)
        op.seen.add((launch.thread, number))
        moved = KernelTime()
        moved.add(launch.ns, name=launch.name)
        moves.append((target, moved))
    return found, moves


def _region(target: tuple[str, ...]) -> str:
    """The region's name from its eager target's label (`totals.EAGER`)."""
    label = target[2] if len(target) > 2 else ""
    return label.rsplit("compiled region ", 1)[-1].removesuffix(")") or "-"


def _aten_ops(events: list[Any], threads: set[int]) -> dict[int, tuple[Spans, list[Any]]]:
    """The ATen ops the profiler recorded on these threads: spans and their events by number."""
    found: dict[int, tuple[Spans, list[Any]]] = {}
    cpu = torch._C._autograd.DeviceType.CPU
    for event in events:
        if event.device_type() != cpu or event.start_thread_id() not in threads:
            continue
        if not event.name().startswith("aten::"):
            continue
        spans, ops = found.setdefault(event.start_thread_id(), ([], []))
        spans.append((event.start_ns(), event.end_ns(), len(ops)))
        ops.append(event)
    return found


def _tree_nodes(results: Any, wanted: set[int]) -> dict[int, Any]:
    """The event tree's nodes of these ops, by correlation id: their tensors' dtypes, strides
    and devices (none when this profile has no tree)."""
    tree = getattr(results, "experimental_event_tree", None)
    if tree is None or not wanted:
        return {}
    found: dict[int, Any] = {}
    stack = list(tree())
    while stack:
        node = stack.pop()
        if node.correlation_id in wanted and node.name.startswith("aten::"):
            found[node.correlation_id] = node
        stack.extend(node.children)
    return found


def _outermost(
    events: list[OpEvent], chain: list[int], fill: str | None, numbers: bool
) -> tuple[int, ProfiledCall] | None:
    """The outermost op of a chain (both innermost first: the ops and their numbers) that the
    profile describes whole, with its number. `numbers`: its kernels do not compute in double,
    so a 0-d float64 host tensor in it was a Python number (`mask * 0.5`: float32)."""
    for event, number in reversed(list(zip(events, chain, strict=True))):
        try:
            call = described(event, fill, numbers)
            if numbers and not _takes_numbers(call):  # (then its 0-d float64 was a tensor)
                call = described(event, fill, False)
        except Lost:
            continue
        if why_not_replayed(call.overload, call.args) is None:  # (not a data-dependent op)
            return number, call
    return None


def _takes_numbers(call: ProfiledCall) -> bool:
    """Whether the op takes a Python number where the call has `{number: float64}`: the
    arithmetic ops do (`mask * 0.5`), `where`, `lerp` or `maximum` take only a tensor there,
    so no Python number was passed (tried on meta tensors; True where that cannot tell)."""
    if UNKEPT_NUMBER not in [*call.args, *call.kwargs.values()]:
        return True
    _, base, name = call.overload.split(".")
    op = getattr(getattr(torch.ops.aten, base), name)
    args = [1.5 if a == UNKEPT_NUMBER else meta(a) for a in call.args]
    kwargs = {k: 1.5 if v == UNKEPT_NUMBER else meta(v) for k, v in call.kwargs.items()}
    try:
        op(*args, **kwargs)
    except (RuntimeError, TypeError) as exc:
        return "Expected a value of type 'Tensor'" not in str(exc)
    return True
