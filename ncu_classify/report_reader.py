"""Read Nsight Compute reports into kernel rows; the only module that imports ncu_report.

Values come from ncu_report in the unit the report states for each metric and are converted to
card units through the metric catalog; a metric that none of its ncu names provides stays None
and is listed as missing. Compressed reports (`.ncu-rep.xz`, `.ncu-rep.gz`) are inflated into a
temporary file first, since ncu_report reads only from a path.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import ncu_report

from .errors import ReportError
from .metrics import CATALOG, DEVICE_METRICS, PASSES_METRIC, UnitError
from .records import KernelRecord, ReportRead

REPORT_MAGIC = b"NVR\x00"  # first bytes of every .ncu-rep
_DECOMPRESSORS: dict[str, ModuleType] = {".xz": lzma, ".gz": gzip, ".bz2": bz2}


@contextlib.contextmanager
def _plain_file(path: Path) -> Iterator[Path]:
    """The report as an uncompressed file on disk (a temporary copy for compressed ones)."""
    module = _DECOMPRESSORS.get(path.suffix)
    if module is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="ncu-classify-") as tmp:
        plain = Path(tmp) / path.name.removesuffix(path.suffix)
        try:
            with module.open(path, "rb") as src, plain.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise ReportError(f"{path}: cannot decompress: {exc}") from None
        yield plain


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
    """The GPU the report was taken on (name, SM count, L2 size, compute capability)."""
    out: dict[str, str | int | None] = {}
    for key, name in DEVICE_METRICS.items():
        metric = action.metric_by_name(name)
        out[key] = None if metric is None else metric.value()
    return out


def read_kernel(
    action: Any,
    report: str,
    range_index: int,
    action_index: int,
    device: dict[str, str | int | None],
) -> KernelRecord:
    """One kernel row from an ncu_report action (`device`: the report's GPU, read once)."""
    values: dict[str, float | None] = {}
    sources: dict[str, str] = {}
    missing: list[str] = []
    problems: list[str] = []
    for spec in CATALOG:
        values[spec.key] = None
        for name in spec.names:
            metric = action.metric_by_name(name)
            if metric is None or not metric.has_value():
                continue
            try:
                # as_double() reads every numeric kind; value() would dispatch in Python first.
                values[spec.key] = spec.from_report(metric.as_double(), metric.unit())
                sources[spec.key] = name
            except UnitError as exc:
                problems.append(f"{name}: {exc}")
            break
        if values[spec.key] is None:
            missing.append(spec.key)
    passes = action.metric_by_name(PASSES_METRIC)
    return KernelRecord.model_construct(  # trusted values: skip validation on the hot path
        report=report,
        range_index=range_index,
        action_index=action_index,
        mangled=action.name(ncu_report.IAction.NameBase_MANGLED),
        demangled=action.name(ncu_report.IAction.NameBase_DEMANGLED),
        function=action.name(ncu_report.IAction.NameBase_FUNCTION),
        nvtx_ranges=_nvtx_stack(action),
        values=values,
        sources=sources,
        missing=missing,
        unit_problems=problems,
        replay_passes=None if passes is None else int(passes.value()),
        device=device,
    )


def warm_up(path: Path) -> None:
    """Pay ncu_report's one-off start (about 85 ms, at the first kernel a process touches) once,
    in a parent about to fork readers, so that the workers start warm. Errors are left for the
    real read to report."""
    with contextlib.suppress(Exception), _plain_file(path) as plain:
        context = ncu_report.load_report(str(plain))
        if context is not None and context.num_ranges() and context.range_by_idx(0).num_actions():
            context.range_by_idx(0).action_by_idx(0)


def read_report(path: Path, label: str | None = None) -> ReportRead:
    """Every kernel of the report at `path`; `label` is the path written into the rows."""
    label = label or str(path)
    if not path.is_file():
        raise ReportError(f"{path}: no such report file")
    with _plain_file(path) as plain:
        with plain.open("rb") as handle:
            if handle.read(4) != REPORT_MAGIC:
                raise ReportError(f"{path}: not an Nsight Compute report (bad file header)")
        try:
            context = ncu_report.load_report(str(plain))
        except Exception as exc:  # ncu_report raises bare RuntimeErrors and friends
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ReportError(f"{path}: not a readable Nsight Compute report: {first}") from None
        if context is None:
            raise ReportError(f"{path}: not a readable Nsight Compute report")
        kernels: list[KernelRecord] = []
        device: dict[str, str | int | None] | None = None
        for r in range(context.num_ranges()):
            rng = context.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                device = device if device is not None else _device(action)
                kernels.append(read_kernel(action, label, r, a, device))
    if not kernels:
        raise ReportError(f"{path}: holds no profiled kernel (truncated, or ncu profiled nothing)")
    return ReportRead.model_construct(path=label, kernels=kernels)
