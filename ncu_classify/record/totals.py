"""The recording's time ledger: each shape's real kernel time per call, the device work no
shape covers (with its time and the reason), and the totals per stage, which are the sum of
the two, so that coverage is reckoned against everything the program ran on the device
(model building apart)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from ..shapes.file import Shape
from ..shapes.recorded import StageTime, UncoveredCall
from .shapes_document import CallShape
from .timing import TUNING, KernelClock, KernelTime

EAGER = "(code run eagerly between the graphs of compiled region {name})"
EAGER_WHY = "ran eagerly between a compiled region's graphs (a graph break): not seen op by op"
UNCOMPILED_WHY = (
    "ran none of the region's graphs (run eagerly past dynamo's recompile limit or in a frame"
    " it skipped, or failed as it compiled): not seen op by op"
)


class RegionCalls(Protocol):
    """The calls of compiled regions (`regions.Regions`), per (stage, region): all of them,
    those that ran more than one graph, those that ran none."""

    eager_calls: dict[tuple[str, str], int]
    broken: dict[tuple[str, str], int]
    uncompiled: dict[tuple[str, str], int]
    untraced: list[tuple[str, str, str, int, str]]  # stage, name, time key, calls, why


if TYPE_CHECKING:
    from .device_ops import DeviceOps

OUTSIDE_STAGE = "(none)"  # kernels launched outside every call the recorder saw


def measured(clock: KernelClock) -> dict[tuple[str, ...], KernelTime] | None:
    """Kernel time per target (a typed shape, a device op, model building, uncovered work),
    and the marks behind each target that launched kernels; None when nothing was measured."""
    if not clock.measured:
        return None
    per_mark, outside = clock.kernel_times()
    times: dict[tuple[str, ...], KernelTime] = {}
    for number, time in per_mark.items():
        target = ("setup",) if number == TUNING else clock.resolve(number)
        target = target or ("loose", OUTSIDE_STAGE)
        total = times.setdefault(target, KernelTime())
        total.merge(time)
        total.marks += 1
    if outside.kernels or outside.copy_ns:
        times[("outside",)] = outside
    return times


def copy_time(
    times: dict[tuple[str, ...], KernelTime] | None, stage_of: dict[tuple[str, ...], str]
) -> dict[str, float]:
    """Memory copies and sets per stage (us): device time ncu cannot profile, told apart."""
    copies: dict[str, float] = {}
    for target, time in (times or {}).items():
        stage = stage_of.get(target) or (
            target[1] if target[0] in ("uncovered", "loose", "region") else None
        )
        if target[0] == "outside":
            stage = OUTSIDE_STAGE
        if stage is not None and time.copy_ns:
            copies[stage] = copies.get(stage, 0.0) + time.copy_ns / 1000
    return copies


NAME_CHARS = 160  # a kernel name kept is cut to this length
NAMES_KEPT = 40  # the most launched kernel names kept per shape


class PerCall(TypedDict, total=False):
    """What a timed recording says of each call of a shape."""

    real_us: float
    real_kernels: float
    real_kernel_names: dict[str, float]


def per_call(time: KernelTime | None, calls: int, timed: bool) -> PerCall:
    """`real_us`, `real_kernels` and `real_kernel_names` (launches per call) of a shape, when
    the recording was timed."""
    if not timed:
        return {}
    time = time or KernelTime()
    return {
        "real_us": round(time.ns / 1000 / calls, 4),
        "real_kernels": round(time.kernels / calls, 4),
        "real_kernel_names": kernel_names(time.names, calls),
    }


def kernel_names(launches: dict[str, int], calls: int) -> dict[str, float]:
    """The kernels a shape launched, the most launched first (then by name), as launches per
    call: names cut to 160 characters (those that then read alike add up), at most 40 of them,
    so that a templated kernel's signature cannot swell the shapes file."""
    cut: dict[str, int] = {}
    for name, count in launches.items():
        cut[name[:NAME_CHARS]] = cut.get(name[:NAME_CHARS], 0) + count
    kept = sorted(cut, key=lambda name: (-cut[name], name))[:NAMES_KEPT]
    return {name: round(cut[name] / calls, 4) for name in kept}


def document_ops(
    ops: DeviceOps, times: dict[tuple[str, ...], KernelTime] | None
) -> tuple[dict[str, list[CallShape]], list[UncoveredCall]]:
    """The device ops as `aten` shapes per stage, and those a replay would not reproduce (their
    work depends on the values) as uncovered work. On a GPU an op that launched no kernel (a
    copy to or from the host, an empty tensor) is no kernel work and is left out."""
    from ..shapes.aten import AtenShape

    stages: dict[str, list[CallShape]] = {}
    uncovered: list[UncoveredCall] = []
    for key, op in ops.device_work().items():
        time = times.get(("op", key)) if times is not None else None
        if times is not None and (time is None or time.kernels == 0):
            continue
        shape = {**ops.shape_of(op), "real_calls": op.calls}
        shape.update(per_call(time, op.calls, times is not None))
        if op.why_not is None:
            stages.setdefault(op.stage, []).append(shape)
            continue
        try:
            name = AtenShape.model_validate({**shape, "calls": 1}, strict=False).readable()
        except ValueError:
            name = op.op
        readable, number = name, 1  # `:2`, `:3` where another op of the stage reads alike
        while any(u.stage == op.stage and u.name == name for u in uncovered):
            number += 1
            name = f"{readable}:{number}"
        uncovered.append(uncovered_item(op.stage, name, op.why_not, op.calls, time, times))
    return stages, uncovered


def uncovered_item(
    stage: str,
    name: str,
    why: str,
    calls: int,
    time: KernelTime | None,
    times: dict[tuple[str, ...], KernelTime] | None,
) -> UncoveredCall:
    """One line of uncovered work, with its kernels and time when the recording was timed."""
    if times is None:
        return UncoveredCall(stage=stage, name=name, why=why, calls=calls)
    time = time or KernelTime()
    return UncoveredCall(
        stage=stage,
        name=name,
        why=why,
        calls=calls,
        kernels=time.kernels,
        kernel_us=round(time.ns / 1000, 3),
    )


def loose_work(
    failed: dict[tuple[str, str], int], times: dict[tuple[str, ...], KernelTime] | None
) -> list[UncoveredCall]:
    """Uncovered work besides the ops: calls the recorder could not describe or keep (counted
    by stage and name), and kernels launched outside every described op."""
    items: list[UncoveredCall] = []
    for (stage, name), calls in failed.items():
        time = None
        if times is not None:
            time = next((t for k, t in times.items() if k[:3] == ("uncovered", stage, name)), None)
        why = "beyond the recording's cap" if "beyond the" in name else "not described"
        items.append(uncovered_item(stage, name, why, calls, time, times))
    for target, time in (times or {}).items():
        if not time.kernels:
            continue  # (copies alone are not kernel work: they are counted apart)
        if target[0] == "loose":
            why = "launched inside a torch call but outside any ATen op (an extension's kernel)"
            name = "(kernels outside any ATen op)"
            items.append(uncovered_item(target[1], name, why, time.marks, time, times))
        elif target[0] == "outside":
            why = "launched outside every call the recorder saw (another thread, a hook)"
            name = "(kernels outside any recorded call)"
            items.append(uncovered_item(OUTSIDE_STAGE, name, why, 0, time, times))
    return items


def stage_totals(
    stages: dict[str, list[Shape]],
    uncovered: list[UncoveredCall],
    copies: dict[str, float] | None,
) -> dict[str, StageTime]:
    """Per stage: calls, and when timed (`copies` given) kernels and kernel time, summed over
    its shapes (per call x calls) and its uncovered work: every kernel the program ran, counted
    once; and the time of its memory copies and sets apart."""
    sums: dict[str, list[float]] = {}  # stage -> [calls, kernels, kernel_us]

    def add(stage: str, calls: int, kernels: float, micros: float) -> None:
        total = sums.setdefault(stage, [0, 0.0, 0.0])
        total[0] += calls
        total[1] += kernels
        total[2] += micros

    for stage, shapes in stages.items():
        for s in shapes:
            add(stage, s.calls, (s.real_kernels or 0) * s.calls, (s.real_us or 0) * s.calls)
    for item in uncovered:
        add(item.stage, item.calls, item.kernels or 0, item.kernel_us or 0)
    for stage in copies or {}:
        add(stage, 0, 0, 0)
    if copies is None:
        return {stage: StageTime(calls=int(calls)) for stage, (calls, _, _) in sums.items()}
    return {
        stage: StageTime(
            calls=int(calls),
            kernels=round(kernels),
            kernel_us=round(micros, 3),
            copy_us=round(copies.get(stage, 0.0), 3),
        )
        for stage, (calls, kernels, micros) in sums.items()
    }


def its_kernels(time: KernelTime, named: int = 4) -> str:
    """The kernels behind a line of uncovered work, most launched first by base name (what
    the code not seen op by op ran: a conv, copies, norms), as `; its kernels: A x48, ...`."""
    from ..core.kernel_names import base_name

    counts: dict[str, int] = {}
    for name, launches in time.names.items():
        counts[base_name(name)] = counts.get(base_name(name), 0) + launches
    ranked = sorted(counts, key=lambda n: (-counts[n], n))
    told = [f"{n} x{counts[n]}" for n in ranked[:named]]
    rest = f" and {len(ranked) - named} more" if len(ranked) > named else ""
    return f"; its kernels: {', '.join(told)}{rest}" if told else ""


def eager_work(
    regions: RegionCalls,
    times: dict[tuple[str, ...], KernelTime] | None,
    said: Callable[[tuple[str, ...]], str] = lambda _: "",
) -> list[Any]:
    """The code each region ran eagerly, as uncovered work: when timed, the kernels its calls
    launched outside its graphs that no profiled op stands for (`said` names the ops the profile
    did not describe); else its calls that ran more than one graph (the code between them) or
    none (the whole call eager); the cause says which, as the calls counted it."""
    items = []
    for where, calls in regions.eager_calls.items():
        stage, region = where
        name = EAGER.format(name=region)
        broken, eager = regions.broken.get(where, 0), regions.uncompiled.get(where, 0)
        why = "; ".join(w for w, n in ((EAGER_WHY, broken), (UNCOMPILED_WHY, eager)) if n)
        time = times.get(("region", stage, name)) if times is not None else None
        if time is not None and time.kernels:
            why = (why or EAGER_WHY) + its_kernels(time) + said(("region", stage, name))
            items.append(uncovered_item(stage, name, why, calls, time, times))
        elif times is None and broken + eager:
            items.append(uncovered_item(stage, name, why, broken + eager, None, None))
    for stage, name, key, calls, why in regions.untraced:  # no shape: capture cannot replay it
        time = times.get(("shape", key)) if times is not None else None
        items.append(uncovered_item(stage, name, why, calls, time, times))
    return items
