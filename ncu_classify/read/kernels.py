"""Read Nsight Compute reports into kernel rows; the only module that imports ncu_report.

Values come from ncu_report in the unit the report states for each metric and are converted to
card units through the metric catalog; a metric that none of its ncu names provides, or that ncu
recorded as NaN (a kernel it could not profile), stays None and is listed as missing. Compressed
reports are inflated into a temporary file first (`inflate`). Every report is checked whole by
`framing` before ncu_report opens it (it takes a cut file for a shorter report), and the
kernels it yields are checked too.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import math
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import ncu_report

from ..core.counters import fill_products
from ..core.errors import ReportError
from ..core.metrics import (
    CATALOG,
    CATALOG_KEYS,
    DEVICE_METRICS,
    PASSES_METRIC,
    MetricSpec,
    complete,
    scaled,
)
from ..core.stalls import CPI_METRIC, DECIDERS, STALL_REASONS, stall_metric
from ..core.textio import open_regular, os_reason
from ..core.trusted import trusted
from ..core.units import UnitError, unit_factor
from .breakdowns import hot_units
from .framing import SUPPORTED_FORMAT, ReportInfo, version_message
from .inflate import plain_file
from .lean import local_report
from .names import split_repeat
from .rows import KernelRow, ReportRead

# Roofline counts a `--set full` report carries only as rates (it has no `.sum` of them).
RATE_FALLBACK_SPECS = tuple(
    s for s in CATALOG if s.names[0].endswith(".sum") and s.dimension in ("count", "bytes")
)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null: ncu_report's native code logs protobuf and absl
    lines there on damaged input, which would break the one-line errors."""
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


@functools.lru_cache(maxsize=1)
def installed_version() -> str:
    """Version of the installed ncu-report wheel (`2026.3.1`), for version errors."""
    try:
        return importlib.metadata.version("ncu-report")
    except importlib.metadata.PackageNotFoundError:  # the copy shipped in extras/python
        return "(version unknown)"


def _nvtx_stack(action: Any) -> list[str]:
    """Push/pop range names around the kernel, outermost first, domain by domain (the default
    domain, id 0, first)."""
    state = action.nvtx_state()
    if state is None:
        return []
    stack: list[str] = []
    for domain_id in sorted(state.domains()):
        domain = state.domain_by_id(domain_id)
        if domain is not None:
            stack.extend(str(name) for name in domain.push_pop_ranges())
    return stack


def _device(action: Any) -> dict[str, str | int | None]:
    """The GPU the report was taken on (name, SM count, L2 size, compute capability, maximum
    clocks), each from the first of its names that the report holds."""
    out: dict[str, str | int | None] = {}
    for key, names in DEVICE_METRICS.items():
        found = (action.metric_by_name(n) for n in ((names,) if isinstance(names, str) else names))
        metric = next((m for m in found if m is not None), None)
        out[key] = None if metric is None else metric.value()
    return out


def _passes(action: Any) -> int | None:
    """Replay passes ncu needed for the kernel; None when absent or NaN."""
    metric = action.metric_by_name(PASSES_METRIC)
    value = None if metric is None or not metric.has_value() else metric.as_double()
    return int(value) if value is not None and math.isfinite(value) else None


def read_kernel(
    action: Any,
    report: str,
    range_index: int,
    action_index: int,
    device: dict[str, str | int | None],
    factors: dict[str, float | str] | None = None,
) -> KernelRow:
    """One kernel row from an ncu_report action (`device`: the report's GPU, read once;
    `factors`: per metric name, the factor from the unit the report states to the card's, or
    why there is none; one per report, filled as its kernels are read)."""
    factors = {} if factors is None else factors
    values: dict[str, float | None] = dict.fromkeys(CATALOG_KEYS)
    sources: dict[str, str] = {}
    problems: list[str] = []
    lookup = action.metric_by_name
    for spec in CATALOG:
        for name in spec.names:
            metric = lookup(name)
            if metric is None or not metric.has_value():
                continue
            # as_double() reads every numeric kind; value() would dispatch in Python first.
            raw = metric.as_double()
            if not math.isfinite(raw):  # NaN: ncu could not measure it (kernel not profiled)
                continue
            factor = factors.get(name)
            if factor is None:
                factor = factors[name] = _factor(spec, metric.unit())
            if isinstance(factor, str):
                problems.append(f"{name}: {factor}")
            else:
                values[spec.key] = scaled(raw, factor)
                sources[spec.key] = name
            break
    _from_rates(action, values, sources)
    fill_products(functools.partial(_number, action), values, sources)  # --set full names
    complete(values, sources)  # figures the other counters determine (tensor over elapsed)
    missing = [spec.key for spec in CATALOG if values[spec.key] is None]
    ranges, repeat = split_repeat(_nvtx_stack(action))
    return trusted(  # trusted values: skip validation on the hot path
        KernelRow,
        report=report,
        range_index=range_index,
        action_index=action_index,
        mangled_name=action.name(ncu_report.IAction.NameBase_MANGLED),
        demangled_name=action.name(ncu_report.IAction.NameBase_DEMANGLED),
        function_name=action.name(ncu_report.IAction.NameBase_FUNCTION),
        nvtx_ranges=ranges,
        repeat=repeat,
        metrics=values,
        metric_sources=sources,
        missing_metrics=missing,
        unit_problems=problems,
        replay_passes=_passes(action),
        device=device,
        hot_units=hot_units(action),
        stalls=_stalls(action),
    )


def _factor(spec: MetricSpec, unit: str) -> float | str:
    """The factor from `unit` to the card unit of `spec`, or why `unit` cannot be converted."""
    try:
        return unit_factor(spec.dimension, unit, spec.per_base)
    except UnitError as exc:
        return str(exc)


def _stalls(action: Any) -> dict[str, float] | None:
    """Warp-state figures where the report holds them (a drill-down capture, a `--set full`
    report): `cpi`, each stall reason, each decider that has a value; None without a CPI (one
    lookup for the reports that lack them)."""
    cpi = _number(action, CPI_METRIC)
    if cpi is None:
        return None
    found = {"cpi": cpi}
    for reason in STALL_REASONS:
        value = _number(action, stall_metric(reason))
        if value is not None:
            found[reason] = value
    for decider in DECIDERS:
        value = _number(action, decider.name)
        if value is not None:
            found[decider.key] = value
    return found


def _from_rates(action: Any, values: dict[str, float | None], sources: dict[str, str]) -> None:
    """Counts a `--set full` report keeps only as rates: `<c>.sum.per_second` x the duration
    (DRAM bytes) or `<c>.sum.per_cycle_elapsed` x the unit's cycles (FP32 instructions)."""
    duration = _number(action, "gpu__time_duration.sum")
    if duration is None:
        return
    seconds = duration * 1e-9  # ncu_report gives base units: ns
    for spec in RATE_FALLBACK_SPECS:
        if values.get(spec.key) is not None:
            continue
        name = spec.names[0]
        rate = _number(action, f"{name}.per_second")
        if rate is not None:
            values[spec.key], sources[spec.key] = rate * seconds, f"{name}.per_second x duration"
            continue
        unit = name.split("__", 1)[0]
        per_cycle = _number(action, f"{name}.per_cycle_elapsed")
        clock = _number(action, f"{unit}__cycles_elapsed.avg.per_second")
        if per_cycle is not None and clock is not None:
            values[spec.key] = float(f"{per_cycle * clock * seconds:.12g}")
            sources[spec.key] = f"{name}.per_cycle_elapsed x {unit} cycles elapsed"


def _number(action: Any, name: str) -> float | None:
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_value():
        return None
    value = metric.as_double()
    return value if math.isfinite(value) else None


def warm_up(path: Path, scratch: Path | None = None) -> None:
    """Pay ncu_report's one-off start (about 85 ms, at the first kernel a process touches) once,
    in a parent about to fork readers, so that the workers start warm. Errors are left for the
    real read to report."""
    with contextlib.suppress(Exception), plain_file(path, scratch) as plain, _quiet_stderr():
        context = ncu_report.load_report(str(plain))
        if context is not None and context.num_ranges() and context.range_by_idx(0).num_actions():
            context.range_by_idx(0).action_by_idx(0)


def _damage(action: Any, row: KernelRow) -> str | None:
    """Why a kernel looks like the phantom ncu_report makes of a cut result (no name, no metric
    at all), or None. metric_names() costs 0.6 ms on a --set full kernel: asked only when no
    catalog metric has a value, and a NaN-only kernel, which ncu wrote, still has its names."""
    if not row.mangled_name:
        return "has no name"
    if len(row.missing_metrics) == len(CATALOG) and not action.metric_names():
        return "holds no metric at all"
    return None


def _load(plain: Path, path: Path) -> Any:
    """ncu_report's context for the report file `plain`; errors name `path`."""
    try:
        with _quiet_stderr():
            context = ncu_report.load_report(str(plain))
    except Exception as exc:  # ncu_report raises bare RuntimeErrors and friends
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReportError(f"{path}: not a readable Nsight Compute report: {first}") from None
    if context is None:
        raise ReportError(f"{path}: not a readable Nsight Compute report")
    return context


Window = tuple[int, int]  # kernels [start, stop) of a report, in report order


def _kernels(
    plain: Path, path: Path, label: str, info: ReportInfo, window: Window | None = None
) -> Iterator[KernelRow]:
    """Every kernel of the checked report file `plain` (those of `window` only, when given),
    as it is read, refusing a damaged one (the refusal can come after some kernels); errors
    name `path`, rows `label`."""
    context = _load(plain, path)
    device: dict[str, str | int | None] | None = None
    factors: dict[str, float | str] = {}  # per metric name, for every kernel of the report
    start, stop = window or (0, 2**62)
    position = 0  # kernels of the report before this range
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        count = rng.num_actions()
        for a in range(max(0, start - position), min(count, stop - position)):
            with _quiet_stderr():  # it parses the kernel's result here: logs on damage
                action = rng.action_by_idx(a)
            device = device if device is not None else _device(action)
            row = read_kernel(action, label, r, a, device, factors)
            problem = _damage(action, row)
            if problem:
                block = info.kernel_block(position + a)
                where = f", in the block at byte {block}" if block is not None else ""
                raise ReportError(
                    f"{path}: damaged report: kernel {position + a} (range {r}, action {a}"
                    f"{where}) {problem}"
                )
            yield row
        position += count
    if not position:
        raise ReportError(f"{path}: holds no profiled kernel (truncated, or ncu profiled nothing)")
    if info.kernels is not None and position < info.kernels:
        raise ReportError(
            f"{path}: damaged report: its block headers announce {info.kernels} kernels "
            f"but ncu_report read {position}"
        )


def read_report(
    path: Path, label: str | None = None, scratch: Path | None = None, window: Window | None = None
) -> ReportRead:
    """Every kernel of the report at `path` (those of `window` only, when given: a part of a
    large report read beside the others); `label` is the path written into the rows;
    compressed reports are inflated under `scratch` (default: the system's temporary folder)."""
    kernels = list(iter_report(path, label, scratch, window))
    return trusted(ReportRead, path=label or str(path), kernels=kernels)


def iter_report(
    path: Path,
    label: str | None = None,
    scratch: Path | None = None,
    window: Window | None = None,
    checked: ReportInfo | None = None,
) -> Generator[KernelRow, None, None]:
    """`read_report`'s kernels one by one, as they are read, for a reader that hands them on
    while it reads; a ReportError can still come after some kernels (then they are void).
    `checked`: the framing of the plain file `path` where the read plan checked it already."""
    label = label or str(path)
    open_regular(path, ReportError).close()  # not a FIFO, device, folder or dangling link
    try:
        with local_report(path, scratch, checked) as (plain, info):
            try:
                yield from _kernels(plain, path, label, info, window)
            except ReportError:
                if info.format_version in (None, SUPPORTED_FORMAT):
                    raise
                raise ReportError(version_message(path, info, installed_version())) from None
    except OSError as exc:  # unreadable, or gone since it was listed
        raise ReportError(f"{path}: cannot read: {os_reason(path, exc)}") from None
