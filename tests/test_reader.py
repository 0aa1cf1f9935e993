"""The report reader against real H200 reports, checked value by value with ncu_report itself."""

from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import ncu_report
import pytest
from conftest import SMOKE, USER_FULL

from ncu_classify.errors import ReportError
from ncu_classify.metrics import CATALOG
from ncu_classify.report_reader import read_report

# Card unit = raw base unit (as ncu_report gives it) / factor.
BASE_FACTORS = {
    "dur_us": 1e3,
    "smem_dyn_kb": 1e3,
    "dram_read_mb": 1e6,
    "dram_write_mb": 1e6,
    "sm_clock_ghz": 1e9,
}


def _raw_actions(path: Path, tmp_path: Path) -> list:
    plain = tmp_path / path.name.removesuffix(".xz")
    with lzma.open(path) as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    ctx = ncu_report.load_report(str(plain))
    return [
        ctx.range_by_idx(r).action_by_idx(a)
        for r in range(ctx.num_ranges())
        for a in range(ctx.range_by_idx(r).num_actions())
    ]


@pytest.mark.parametrize("stem", ["dit", "vae", "attention", "output"])
def test_every_value_matches_ncu_report(stem: str, tmp_path: Path) -> None:
    path = SMOKE / f"{stem}.ncu-rep.xz"
    rows = read_report(path).kernels
    actions = _raw_actions(path, tmp_path)
    assert len(rows) == len(actions) > 0
    for row, action in zip(rows, actions, strict=True):
        assert row.mangled == action.name(ncu_report.IAction.NameBase_MANGLED)
        assert row.demangled == action.name(ncu_report.IAction.NameBase_DEMANGLED)
        assert row.missing == []
        for spec in CATALOG:
            raw = action.metric_by_name(row.sources[spec.key]).value()
            assert row.values[spec.key] == pytest.approx(raw / BASE_FACTORS.get(spec.key, 1.0))


def test_exact_values_of_the_bf16_gemm() -> None:
    """Figures read with ncu_report from dit.ncu-rep (4680x5120x5120 bf16 GEMM + bias)."""
    gemm = read_report(SMOKE / "dit.ncu-rep.xz").kernels[0]
    assert gemm.nvtx_ranges == ["dit:linear:M4680_N5120_K5120:bf16:bias"]
    assert gemm.function == "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT"
    assert gemm.values["dur_us"] == 303.008  # 303008 ns, no float noise
    assert gemm.values["sm_pct"] == pytest.approx(94.45938179495188)
    assert gemm.values["dram_pct"] == pytest.approx(24.378794625924687)
    assert gemm.values["dram_read_mb"] == pytest.approx(314.079232)  # 314079232 byte
    assert gemm.values["smem_dyn_kb"] == pytest.approx(221.38)  # 221380 byte/block
    assert gemm.values["sm_clock_ghz"] == pytest.approx(1.6099532925623326)
    assert gemm.replay_passes == 9
    assert gemm.device["name"] == "NVIDIA H200" and gemm.device["sm_count"] == 132


def test_full_set_report_uses_the_gpu_dram_alias() -> None:
    """In a `--set full` report DRAM throughput is only under gpu__dram_throughput."""
    rows = read_report(USER_FULL).kernels
    assert [r.function for r in rows] == [
        "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_TNT",
        "unrolled_elementwise_kernel",
        "vectorized_elementwise_kernel",
        "reduce_kernel",
    ]
    assert {r.sources["dram_pct"] for r in rows} == {
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    }
    assert rows[0].replay_passes == 38
    assert rows[0].values["dur_us"] == 301.28
    assert rows[0].nvtx_ranges == []


def test_templated_names_survive_verbatim() -> None:
    flash = read_report(SMOKE / "attention.ncu-rep.xz").kernels[1]
    assert flash.function == "flash_fwd_kernel"
    assert flash.demangled.startswith(
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128,"
    )
    assert flash.demangled.count("<") == flash.demangled.count(">") > 2


@pytest.mark.parametrize("keep", [0.3, 0.95])
def test_truncated_report_is_a_report_error(keep: float, tmp_path: Path) -> None:
    """ncu_report opens a truncated report without complaint but finds no kernel in it."""
    data = lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ReportError, match=r"cut.ncu-rep: holds no profiled kernel"):
        read_report(cut)


def test_non_report_file_is_a_report_error(tmp_path: Path) -> None:
    fake = tmp_path / "fake.ncu-rep"
    fake.write_text("not a report\n")
    with pytest.raises(ReportError, match=r"fake.ncu-rep: not an Nsight Compute report"):
        read_report(fake)


def test_corrupt_compression_is_a_report_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ncu-rep.xz"
    bad.write_bytes((SMOKE / "dit.ncu-rep.xz").read_bytes()[:5000])
    with pytest.raises(ReportError, match=r"bad.ncu-rep.xz: cannot decompress"):
        read_report(bad)
