"""The report reader against real H200 reports, checked value by value with ncu_report itself."""

from __future__ import annotations

import importlib.metadata
import lzma
import math
import shutil
from pathlib import Path

import ncu_report
import pytest
from helpers import ROOT, SMOKE, USER_FULL

from ncu_classify.core.counters import roofline_counters
from ncu_classify.core.errors import ReportError
from ncu_classify.core.metrics import CATALOG
from ncu_classify.read.framing import ReportInfo, check_report
from ncu_classify.read.kernels import _kernels, installed_version, read_report

PUBLIC = ROOT / "fixtures" / "public"

DERIVED_HERE = {"tensor_pct", "sm_cycles_elapsed"}
ROOFLINE_KEYS = [counter.key for counter in roofline_counters()]
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
        assert row.mangled_name == action.name(ncu_report.IAction.NameBase_MANGLED)
        assert row.demangled_name == action.name(ncu_report.IAction.NameBase_DEMANGLED)
        assert row.missing_metrics == ROOFLINE_KEYS  # captured before the roofline counters
        raw = {n: action.metric_by_name(n).value() for n in action.metric_names()}
        for spec in CATALOG:
            if spec.key in DERIVED_HERE or spec.key in ROOFLINE_KEYS:  # these reports predate them
                continue
            value = raw[row.metric_sources[spec.key]] / BASE_FACTORS.get(spec.key, 1.0)
            assert row.metrics[spec.key] == pytest.approx(value)
        # sm__cycles_elapsed.avg = its rate x the duration; tensor over elapsed = over active x
        # active cycles / elapsed cycles (the reports hold only the active variant)
        elapsed = raw["sm__cycles_elapsed.avg.per_second"] * raw["gpu__time_duration.sum"] * 1e-9
        assert row.metrics["sm_cycles_elapsed"] == pytest.approx(elapsed, rel=1e-11)
        active = raw["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]
        tensor = active * raw["sm__cycles_active.avg"] / elapsed
        assert row.metrics["tensor_pct"] == pytest.approx(tensor, rel=1e-11)
        assert row.metric_sources["tensor_pct"] == (
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
            " x sm__cycles_active.avg / (sm__cycles_elapsed.avg.per_second x"
            " gpu__time_duration.sum)"
        )


def test_exact_values_of_the_bf16_gemm() -> None:
    """Figures read with ncu_report from dit.ncu-rep (4680x5120x5120 bf16 GEMM + bias)."""
    gemm = read_report(SMOKE / "dit.ncu-rep.xz").kernels[0]
    assert gemm.nvtx_ranges == ["dit:linear:M4680_N5120_K5120:bf16:bias"]
    assert gemm.function_name == "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT"
    assert gemm.metrics["dur_us"] == 303.008  # 303008 ns, no float noise
    assert gemm.metrics["sm_pct"] == pytest.approx(94.45938179495188)
    assert gemm.metrics["dram_pct"] == pytest.approx(24.378794625924687)
    assert gemm.metrics["dram_read_mb"] == pytest.approx(314.079232)  # 314079232 byte
    assert gemm.metrics["smem_dyn_kb"] == pytest.approx(221.38)  # 221380 byte/block
    assert gemm.metrics["sm_clock_ghz"] == pytest.approx(1.6099532925623326)
    assert gemm.replay_passes == 9
    assert gemm.device["name"] == "NVIDIA H200" and gemm.device["sm_count"] == 132


def test_full_set_report_uses_the_gpu_dram_alias() -> None:
    """In a `--set full` report DRAM throughput is only under gpu__dram_throughput."""
    rows = read_report(USER_FULL).kernels
    assert [r.function_name for r in rows] == [
        "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_TNT",
        "unrolled_elementwise_kernel",
        "vectorized_elementwise_kernel",
        "reduce_kernel",
    ]
    assert {r.metric_sources["dram_pct"] for r in rows} == {
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    }
    assert rows[0].replay_passes == 38
    assert rows[0].metrics["dur_us"] == 301.28
    assert rows[0].nvtx_ranges == []


def test_templated_names_survive_verbatim() -> None:
    flash = read_report(SMOKE / "attention.ncu-rep.xz").kernels[1]
    assert flash.function_name == "flash_fwd_kernel"
    assert flash.demangled_name.startswith(
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128,"
    )
    assert flash.demangled_name.count("<") == flash.demangled_name.count(">") > 2


@pytest.mark.parametrize("keep", [0.1, 0.4, 0.7, 0.99])
def test_truncated_report_is_a_report_error(keep: float, tmp_path: Path) -> None:
    """ncu_report opens a cut report without complaint (fewer kernels, or a nameless one);
    the framing check refuses it first, saying where it ends."""
    data = lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())
    cut = tmp_path / "cut.ncu-rep"
    size = int(len(data) * keep)
    cut.write_bytes(data[:size])
    with pytest.raises(ReportError, match=rf"cut.ncu-rep: truncated: .* file ends at byte {size}$"):
        read_report(cut)


def test_cut_mid_payload_message(tmp_path: Path) -> None:
    data = lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[:100_000])
    with pytest.raises(ReportError) as caught:
        read_report(cut)
    assert str(caught.value) == (
        f"{cut}: truncated: block header at byte 145 announces a 2804554-byte payload at "
        "byte 197 but the file ends at byte 100000"
    )


def _cut_plain(src: Path, tmp_path: Path, fraction: float) -> tuple[Path, int]:
    """`src` inflated and cut to `fraction` of its size, and that size."""
    data = lzma.decompress(src.read_bytes())
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[: len(data) * int(fraction * 100) // 100])
    return cut, len(data)


def test_phantom_kernel_of_a_cut_report_is_damage(tmp_path: Path) -> None:
    """Past the framing check, what ncu_report makes of a cut result (a kernel whose names are
    all None and which holds no metric) is still refused. (The report has no source blocks
    since fixtures/README.md's rewrite: cuts at 6-13 % of it end inside its first result.)"""
    cut, _ = _cut_plain(
        ROOT / "fixtures/workload_h200_480x832_40heads/dit.ncu-rep.xz", tmp_path, 0.10
    )
    context = ncu_report.load_report(str(cut))
    phantom = context.range_by_idx(0).action_by_idx(0)
    assert context.range_by_idx(0).num_actions() == 1
    assert phantom.name() is None and len(phantom.metric_names()) == 0
    info = ReportInfo(".ncu-rep", cut.stat().st_size, 7)
    with pytest.raises(ReportError) as caught:
        list(_kernels(cut, Path("raw/dit.ncu-rep"), "raw/dit.ncu-rep", info))
    assert str(caught.value) == (
        "raw/dit.ncu-rep: damaged report: kernel 0 (range 0, action 0) has no name"
    )


def test_fewer_kernels_than_the_headers_announce_is_damage(tmp_path: Path) -> None:
    plain = tmp_path / "dit.ncu-rep"
    plain.write_bytes(lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes()))
    info = check_report(plain)
    assert info.kernels == 3 and len(list(_kernels(plain, plain, "dit", info))) == 3
    info.kernels = 4
    with pytest.raises(ReportError, match=r"announce 4 kernels but ncu_report read 3$"):
        list(_kernels(plain, plain, "dit", info))


def test_zero_filled_tail_is_refused(tmp_path: Path) -> None:
    padded = tmp_path / "padded.ncu-rep"
    padded.write_bytes(lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes()) + bytes(4096))
    assert _action_count(padded) == 3  # ncu_report does not mind
    with pytest.raises(ReportError, match=r"declares 0 bytes \(zero-filled from there\?\)$"):
        read_report(padded)


def _action_count(path: Path) -> int:
    """Kernels ncu_report itself finds in `path`."""
    ctx = ncu_report.load_report(str(path))
    return sum(ctx.range_by_idx(r).num_actions() for r in range(ctx.num_ranges()))


def test_unprofiled_kernel_has_every_metric_missing(tmp_path: Path) -> None:
    """nodeByPoint5 (A100, ncu 2022.4.0, --set full): ncu could not profile it and wrote NaN."""
    path = PUBLIC / "mistic_a100_2022.4.0_unprofiled.ncu-rep.xz"
    (action,) = _raw_actions(path, tmp_path)
    assert math.isnan(action.metric_by_name("gpu__time_duration.sum").as_double())
    (row,) = read_report(path).kernels
    assert row.function_name == "nodeByPoint5" and row.replay_passes == 1
    assert row.missing_metrics == [spec.key for spec in CATALOG]  # its DRAM peak of 0 too: no peak
    assert row.metric_sources == {} and set(row.metrics.values()) == {None}
    assert row.device["name"] == "NVIDIA A100-PCIE-40GB"


def test_nan_metric_among_real_ones_is_missing(tmp_path: Path) -> None:
    """Xavier (ncu 2019.x, launch statistics only): ncu wrote the shared-memory occupancy limit
    as NaN next to real launch figures; before, the card showed null without listing it."""
    path = PUBLIC / "darknet_xavier_2019.nsight-cuprof-report.xz"
    action = _raw_actions(path, tmp_path)[0]
    assert math.isnan(action.metric_by_name("launch__occupancy_limit_shared_mem").as_double())
    row = read_report(path).kernels[0]
    assert row.function_name == "fill_kernel" and row.replay_passes is None
    assert "occ_limit_smem" in row.missing_metrics and "occ_limit_smem" not in row.metric_sources
    assert row.metrics["occ_limit_smem"] is None and row.metrics["occ_limit_regs"] == 8
    assert (row.metrics["grid"], row.metrics["block"], row.metrics["regs"]) == (9216, 512, 16)
    # 46 of the 54 catalog metrics: launch statistics carry no throughput nor roofline counter
    assert len(row.missing_metrics) == 46 and row.metric_sources["grid"] == "launch__grid_size"


# name: (kernels, first kernel's function, GPU, its dur_us)
PUBLIC_KERNELS = {
    "mistic_a100_2020.3.0.ncu-rep.xz": (
        1,
        "searchKernelCOSStree",
        "NVIDIA A100-PCIE-40GB",
        3051592.96,
    ),
    "speedy_scan_rtx3070_2020.3.1.ncu-rep.xz": (1, "kernel", "NVIDIA GeForce RTX 3070", 336.704),
    "mistic_a100_2021.2.2.ncu-rep.xz": (
        4,
        "nodeCalculationsKernel",
        "NVIDIA A100-PCIE-40GB",
        1315750.304,
    ),
    "cudacode_rtx2080ti_2022.3.0.ncu-rep.xz": (
        2,
        "kernel_A",
        "NVIDIA GeForce RTX 2080 Ti",
        1168077.824,
    ),
    "mojo_gtx1660ti_2022.4.0.ncu-rep.xz": (4, "warmingUp", "NVIDIA GeForce GTX 1660 Ti", 1.6),
    "hyperspec_rtx2060maxq_2024.3.2.ncu-rep.xz": (
        8,
        "hd_enc_lvid_packed_cuda",
        "NVIDIA GeForce RTX 2060 with Max-Q Design",
        17614.88,
    ),
    "physicell_v100_2019.nsight-cuprof-report.xz": (
        30,
        "__pgi_uacc_cuda_fill",
        "Tesla V100-PCIE-16GB",
        2.4,
    ),
}


@pytest.mark.parametrize("name", sorted(PUBLIC_KERNELS))
def test_public_reports_of_other_gpus_and_versions(name: str) -> None:
    rows = read_report(PUBLIC / name).kernels
    first = rows[0]
    assert (len(rows), first.function_name, first.device["name"]) == PUBLIC_KERNELS[name][:3]
    assert first.metrics["dur_us"] == pytest.approx(PUBLIC_KERNELS[name][3])
    assert first.metric_sources["dur_us"] == "gpu__time_duration.sum"


def _rows(path: Path) -> list[tuple[str, dict[str, float | None]]]:
    """(mangled name, values) of every kernel of a report."""
    return [(r.mangled_name, r.metrics) for r in read_report(path).kernels]


def test_ncu_repz_reads_like_the_plain_report(tmp_path: Path) -> None:
    """An .ncu-repz is the whole report compressed with zstd; ncu_report reads it natively."""
    repz = PUBLIC / "dit_h200_2025.3.1.ncu-repz"
    expected = _rows(SMOKE / "dit.ncu-rep.xz")
    assert len(expected) == 3 and _rows(repz) == expected
    misnamed = tmp_path / "zstd_inside.ncu-rep"  # ncu_report alone would find no kernel here
    misnamed.write_bytes(repz.read_bytes())
    assert _action_count(misnamed) == 0 and _rows(misnamed) == expected
    plain = tmp_path / "plain_inside.ncu-repz"
    plain.write_bytes(lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes()))
    assert _action_count(plain) == 0 and _rows(plain) == expected


def test_cut_ncu_repz_is_a_report_error(tmp_path: Path) -> None:
    """ncu_report finds 0 kernels in a cut .ncu-repz; the zstd framing says where it ends."""
    cut = tmp_path / "cut.ncu-repz"
    cut.write_bytes((PUBLIC / "dit_h200_2025.3.1.ncu-repz").read_bytes()[:7600])
    assert _action_count(cut) == 0
    with pytest.raises(ReportError) as caught:
        read_report(cut)
    assert str(caught.value) == (
        f"{cut}: truncated: zstd block at byte 4481 declares 4247 bytes "
        "but the file ends at byte 7600"
    )


def _with_version(tmp_path: Path, version: int, tail: bytes | None = None) -> Path:
    """dit.ncu-rep with FileHeader.Version set to `version` (and its blocks replaced by `tail`)."""
    data = bytearray(lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes()))
    assert data[4:10] == b"\x02\x00\x00\x00\x08\x07"
    data[9] = version
    out = tmp_path / f"v{version}.ncu-rep"
    out.write_bytes(bytes(data) if tail is None else bytes(data[:10]) + tail)
    return out


def test_ncu_report_ignores_a_newer_version_number(tmp_path: Path) -> None:
    """ncu_report reads format 8+ as 7: a report whose layout did not change still reads."""
    assert len(read_report(_with_version(tmp_path, 8)).kernels) == 3


def test_unreadable_newer_format_says_upgrade(tmp_path: Path) -> None:
    report = _with_version(tmp_path, 9, tail=bytes(range(256)) * 8)
    with pytest.raises(ReportError) as caught:
        read_report(report)
    assert str(caught.value) == (
        f"{report}: written by an unknown Nsight Compute (report format 9); the installed "
        f"ncu-report {installed_version()} reads up to format 7: upgrade with "
        "pip install -U ncu-report"
    )


def test_older_format_names_both_versions(tmp_path: Path) -> None:
    """ncu_report finds no kernel in a report whose FileHeader.Version is below 7."""
    report = _with_version(tmp_path, 6)
    with pytest.raises(ReportError) as caught:
        read_report(report)
    assert str(caught.value) == (
        f"{report}: written by Nsight Compute 2025.3.1.0 in report format 6, older than "
        f"format 7, the only one the installed ncu-report {installed_version()} reads"
    )
    assert installed_version() == importlib.metadata.version("ncu-report")
    assert ncu_report.load_report(str(report)).num_ranges() == 0


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
