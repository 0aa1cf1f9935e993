"""`--set full` reports hold L2 traffic as sectors, not bytes (issue 15, item 5).

fixtures/set_full_h200 (H200, ncu 2025.3.1): an 8192^3 bf16 GEMM under a plain `ncu --set full`
(gemm8192_set_full) and the same shape captured by ncu-classify (capture/, which asks for
lts__t_bytes.sum and l1tex__t_bytes.sum); h200_rerun_full and fixtures/user_set_full are two
more `--set full` reports. Values are checked against ncu_report's own.
"""

from __future__ import annotations

import lzma
from pathlib import Path

import ncu_report
import pytest
from helpers import ROOT

from ncu_classify.cards.model import Card, KernelCard
from ncu_classify.core.metrics import metric_rows
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

FOLDER = ROOT / "fixtures" / "set_full_h200"
SET_FULL = FOLDER / "gemm8192_set_full.ncu-rep.xz"
SET_FULL_REPORTS = [
    SET_FULL,
    FOLDER / "h200_rerun_full.ncu-rep.xz",
    ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz",
]
SECTORS = "lts__t_sectors.sum x 32"
PEAK = "lts__t_sectors.avg.peak_sustained x 32 x lts__cycles_elapsed.sum / lts__cycles_elapsed.avg"


def _raw(path: Path, tmp_path: Path) -> list[dict[str, float]]:
    """Every numeric metric of every kernel of `path`, straight from ncu_report."""
    plain = tmp_path / path.name.removesuffix(".xz")
    plain.write_bytes(lzma.decompress(path.read_bytes()))
    ctx = ncu_report.load_report(str(plain))
    out = []
    for r in range(ctx.num_ranges()):
        for a in range(ctx.range_by_idx(r).num_actions()):
            action = ctx.range_by_idx(r).action_by_idx(a)
            values = {}
            for name in action.metric_names():
                metric = action.metric_by_name(name)
                if metric.has_value() and isinstance(metric.value(), (int, float)):
                    values[name] = float(metric.value())
            out.append(values)
    return out


def _gemm(cards: list[Card]) -> KernelCard:
    return next(k for c in cards for k in c.kernels if k.function_name.startswith("nvjet"))


def test_set_full_gemm_has_l2_bytes_intensity_and_roof(rules: LoadedRules, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Before: l2_bytes and peak_l2_bytes null, so no L2 intensity, bandwidth nor roof."""
    raw = _raw(SET_FULL, tmp_path)[0]
    assert "lts__t_bytes.sum" not in raw and raw["lts__t_sectors.sum"] == 260_531_040
    kernel = _gemm(classify([SET_FULL], rules, jobs=1).cards)
    m, sources = kernel.metrics, kernel.metric_sources
    assert m["l2_bytes"] == 260_531_040 * 32 == 8_336_993_280
    assert (sources["l2_bytes"], sources["peak_l2_bytes"]) == (SECTORS, PEAK)
    slices = raw["lts__cycles_elapsed.sum"] / raw["lts__cycles_elapsed.avg"]
    assert slices == 94 and raw["lts__t_sectors.avg.peak_sustained"] == 3
    assert m["peak_l2_bytes"] == 3 * 32 * 94 == 9024
    roof = kernel.roofline
    assert roof is not None and roof.executed_flops is not None
    assert roof.intensity["l2"] == pytest.approx(roof.executed_flops / 8_336_993_280, rel=1e-5)
    bandwidth = 9024 * raw["lts__cycles_elapsed.avg.per_second"]
    assert roof.bandwidth_tbps["l2"] == pytest.approx(bandwidth / 1e12, rel=1e-5)
    assert roof.intensity["l2"] == pytest.approx(133.944)
    assert roof.bandwidth_tbps["l2"] == pytest.approx(15.3752)
    assert roof.missing == ["l1_bytes", "peak_l1_bytes"]  # no L1 tag-stage total: see below


def test_set_full_and_capture_agree_on_l2(rules: LoadedRules) -> None:
    """The same 8192^3 GEMM in two runs (NNT under --set full, TNT captured): L2 bytes within
    3 % (8.337 GB of sectors x 32 against 8.169 GB of lts__t_bytes.sum), the same peak."""
    full = _gemm(classify([SET_FULL], rules, jobs=1).cards)
    captured = _gemm(classify([FOLDER / "capture"], rules, jobs=1).cards)
    assert captured.metric_sources["l2_bytes"] == "lts__t_bytes.sum"
    assert captured.metrics["l2_bytes"] == 8_169_357_312
    assert full.metrics["peak_l2_bytes"] == captured.metrics["peak_l2_bytes"] == 9024
    assert full.metrics["l2_bytes"] == pytest.approx(captured.metrics["l2_bytes"], rel=0.03)
    ratio = full.metrics["l2_bytes"] / captured.metrics["l2_bytes"]  # type: ignore[operator]
    assert ratio == pytest.approx(1.0205, abs=1e-4)
    assert full.roofline is not None and captured.roofline is not None
    intensity = full.roofline.intensity["l2"], captured.roofline.intensity["l2"]
    assert intensity[0] == pytest.approx(intensity[1], rel=0.03)


@pytest.mark.parametrize("path", SET_FULL_REPORTS, ids=lambda p: p.name)
def test_every_set_full_kernel_and_what_stays_null(
    path: Path, rules: LoadedRules, tmp_path: Path
) -> None:
    """Every kernel of the three --set full reports: L2 bytes = sectors x 32 exactly, and the
    only catalog metrics still null are L1's bytes and peak: the report has no total of L1
    tag-stage sectors (only splits by pipe, memory space and operation) and no L1 peak."""
    raws = _raw(path, tmp_path)
    kernels = [k for c in classify([path], rules, jobs=1).cards for k in c.kernels]
    assert len(kernels) == len(raws) >= 4
    for raw in raws:
        assert "l1tex__t_bytes.sum" not in raw and "l1tex__t_sectors.sum" not in raw
        assert "l1tex__t_bytes.sum.peak_sustained" not in raw
    by_index = {tuple(k.launch_index or ()): k for k in kernels}
    for index, raw in enumerate(raws):
        kernel = by_index[(0, index)]
        assert kernel.metrics["l2_bytes"] == raw["lts__t_sectors.sum"] * 32
        assert kernel.metric_sources["l2_bytes"] == SECTORS
        assert kernel.metrics["peak_l2_bytes"] == 9024
        assert kernel.missing_metrics == ["l1_bytes", "peak_l1_bytes"]


def test_metrics_command_names_the_set_full_products() -> None:
    rows = {row[0]: row[2] for row in metric_rows()}
    assert rows["l2_bytes"] == f"lts__t_bytes.sum | {SECTORS}"
    assert rows["peak_l2_bytes"] == f"lts__t_bytes.sum.peak_sustained | {PEAK}"
    assert rows["l1_bytes"] == "l1tex__t_bytes.sum"
