"""classify on the committed H200 capture: grouping, verdicts, missing metrics, determinism."""

from __future__ import annotations

import json
import lzma
import shutil
from functools import partial
from pathlib import Path

import pytest
from helpers import SMOKE, USER_FULL

from ncu_classify.cards.model import CardFile
from ncu_classify.core.counters import roofline_counters
from ncu_classify.read.names import REPORT_SUFFIXES
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

ROOFLINE_KEYS = [counter.key for counter in roofline_counters()]
# Verdicts of the smoke capture (H200, ncu 2025.3.1), one per shape, in manifest order.
EXPECTED = {
    "dit:linear:M4680_N5120_K5120:bf16:bias": ("compute_bound", 303.008, 1),
    "dit:linear:M4680_N5120_K144:bf16:bias": ("unresolved_no_dominant_limiter", 25.088, 1),
    "dit:linear:M3_N30720_K5120:bf16:bias": ("dram_bandwidth_bound", 77.856, 1),
    "vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32": (
        "compute_bound",
        471.744,
        4,
    ),
    "vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:cl3d": (
        "compute_bound",
        417.568,
        1,
    ),
    "vae:conv3d:in1x192x2x120x52_w384x192x1x1x1_s1x1x1_p0x0x0:fp32:tf32": (
        "unresolved_no_dominant_limiter",
        19.968,
        1,
    ),
    "attention:sdpa_cudnn:self_b1_h40_d128_q4680_k4680of29640:bf16": ("compute_bound", 763.84, 1),
    "attention:sdpa_flash:self_b1_h40_d128_q4680_k4680of29640:bf16": (
        "unresolved_no_dominant_limiter",
        1325.536,
        1,
    ),
    # tensor pipe 61.8% of active cycles but 56.7% of elapsed ones (sm 56.7%): not compute-bound
    "attention:sdpa_cudnn:cross_b1_h40_d128_q4680_k512:bf16": (
        "unresolved_no_dominant_limiter",
        95.04,
        1,
    ),
    "attention:flash_attn:self_b1_h40_d128_q4680_k4680of29640:bf16": (None, None, 0),
    "output:cast:1x3x13x480x832:fp32-bf16": ("dram_bandwidth_bound", 21.6, 1),
}


def test_one_card_per_shape_in_manifest_order(smoke_cards: CardFile) -> None:
    got = {c.group: (c.primary, c.summed_kernel_us, len(c.kernels)) for c in smoke_cards.cards}
    assert list(got) == list(EXPECTED)
    assert got == EXPECTED
    assert smoke_cards.summary == {
        "compute_bound": 4,
        "dram_bandwidth_bound": 2,
        "failed": 1,
        "unresolved_no_dominant_limiter": 4,
    }
    assert smoke_cards.input_errors == []


def test_conv3d_card_keeps_every_kernel(cards_by_group: dict) -> None:
    """NCDHW conv3d: two layout transposes, the implicit GEMM, the transpose back; all kept."""
    card = cards_by_group["vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32"]
    assert [k.function_name for k in card.kernels] == [
        "nchwToNhwcKernel",
        "nchwToNhwcKernel",
        "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32"
        "_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
        "nhwcToNchwKernel",
    ]
    assert [k.classification for k in card.kernels] == [
        "l2_bandwidth_bound",
        "compute_bound",
        "compute_bound",
        "l2_bandwidth_bound",
    ]
    assert card.dominant_kernel == card.kernels[2].kernel
    assert card.summed_kernel_us == pytest.approx(sum(k.metrics["dur_us"] for k in card.kernels))
    assert card.kernels[2].metrics["dur_us"] == 428.736
    assert card.kernels[2].evidence["sm_active_over_elapsed"] == pytest.approx(670156.326 / 755887)
    assert card.input_sha256 == "40c43136b3a4a9864a71833e0ee7ed5b40be886042aedd6e8a7845ab7360d42d"
    assert card.nominal_mac_flops == 99373547520
    assert card.achieved_tflops == pytest.approx(99373547520 / 471.744e-6 / 1e12, abs=1e-3)


def test_card_provenance(cards_by_group: dict, rules: LoadedRules) -> None:
    card = cards_by_group["dit:linear:M3_N30720_K5120:bf16:bias"]
    kernel = card.kernels[0]
    assert kernel.mangled_name == kernel.demangled_name == card.dominant_kernel
    assert kernel.nvtx_range == card.group
    assert kernel.replay_passes == 9
    assert kernel.metric_sources["dram_pct"] == "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    # captured before the roofline counters: those are listed missing, and its roofline too
    assert kernel.missing_metrics == ROOFLINE_KEYS and kernel.unchecked_metrics == []
    assert kernel.roofline is not None and kernel.roofline.pct_of_roof is None
    assert card.gpu.name == "NVIDIA H200" and card.gpu.sm_count == 132
    assert card.primary_rule == "DRAM throughput >= 60% of peak sustained"
    assert card.status == "classified"
    assert card.ncu_output is not None and card.ncu_output.endswith("dit.ncu-rep.xz")


def test_failed_shape_is_a_failed_card(cards_by_group: dict) -> None:
    card = cards_by_group["attention:flash_attn:self_b1_h40_d128_q4680_k4680of29640:bf16"]
    assert card.status == "failed" and card.primary is None and card.kernels == []
    assert card.error == (
        "unsupported: backend flash_attn is not importable here: No module named 'flash_attn'"
    )


def test_foreign_set_full_report_grouped_by_kernel(rules: LoadedRules) -> None:
    cards = classify([USER_FULL], rules, jobs=1)
    assert [(c.group, c.op, c.primary) for c in cards.cards] == [
        ("linear_cast:nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_TNT", "kernel", "compute_bound"),
        ("linear_cast:unrolled_elementwise_kernel", "kernel", "unresolved_no_dominant_limiter"),
        ("linear_cast:vectorized_elementwise_kernel", "kernel", "dram_bandwidth_bound"),
        ("linear_cast:reduce_kernel", "kernel", "dram_bandwidth_bound"),
    ]
    assert cards.cards[0].kernels[0].replay_passes == 38


def test_foreign_report_grouped_by_nvtx_range(tmp_path: Path, rules: LoadedRules) -> None:
    """The same capture report read without its manifest: one card per NVTX range, which
    being our group ids give back the shapes' ids, stage and op."""
    shutil.copy(SMOKE / "vae.ncu-rep.xz", tmp_path)
    cards = classify([tmp_path / "vae.ncu-rep.xz"], rules, jobs=1)
    assert [(c.group, c.stage, c.op, len(c.kernels)) for c in cards.cards] == [
        ("vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32", "vae",
         "aten.conv3d.default", 4),
        ("vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:cl3d", "vae",
         "aten.conv3d.default", 1),
        ("vae:conv3d:in1x192x2x120x52_w384x192x1x1x1_s1x1x1_p0x0x0:fp32:tf32", "vae",
         "aten.conv3d.default", 1),
    ]  # fmt: skip


def _json_without_time(cards: CardFile) -> str:
    doc = cards.model_dump(mode="json")
    doc.pop("generated_at")
    return json.dumps(doc, indent=2)


def test_output_is_deterministic_and_parallel_equals_serial(
    smoke_cards: CardFile, rules: LoadedRules
) -> None:
    again = classify([SMOKE], rules, jobs=4)
    assert _json_without_time(again) == _json_without_time(smoke_cards)


def test_bad_report_is_recorded_and_the_rest_goes_on(tmp_path: Path, rules: LoadedRules) -> None:
    good = tmp_path / "dit.ncu-rep.xz"
    shutil.copy(SMOKE / "dit.ncu-rep.xz", good)
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())[:100_000])
    text = tmp_path / "notes.txt"
    text.write_text("x")
    cards = classify([cut, good, text, tmp_path / "missing.ncu-rep"], rules, jobs=2)
    assert [c.group for c in cards.cards] == [
        "dit:linear:M4680_N5120_K5120:bf16:bias",
        "dit:linear:M4680_N5120_K144:bf16:bias",
        "dit:linear:M3_N30720_K5120:bf16:bias",
    ]
    assert cards.input_errors == [  # named as from any folder (issue 37)
        f"notes.txt: not a report (expected {', '.join(REPORT_SUFFIXES)} or a folder)",
        "missing.ncu-rep: no such file or folder",
        "cut.ncu-rep: truncated: block header at byte 145 announces a 2804554-byte payload at byte"
        " 197 but the file ends at byte 100000",
    ]


def test_kernel_count_mismatch_with_manifest_is_flagged(tmp_path: Path, rules: LoadedRules) -> None:
    """A report that lost kernels against the manifest's count is not silently trusted."""
    for name in ("manifest.json", "dit.ncu-rep.xz"):
        shutil.copy(SMOKE / name, tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["shapes"][0]["kernels"] = 2
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    card = classify([tmp_path], rules, jobs=1).cards[0]
    assert card.status == "failed"
    assert card.error == (
        "1 kernels of this range in the report, but capture counted 2: report incomplete?"
    )


def test_missing_metric_stays_null_and_is_listed(tmp_path: Path, rules: LoadedRules) -> None:
    """Drop the tensor pipe's names (both variants) from the catalog: the card shows null,
    never 0."""
    from ncu_classify.core import metrics

    gone = ("tensor_pct", "tensor_active_pct")
    catalog = tuple(
        metrics.MetricSpec(s.key, ("no__such_metric.sum",), s.dimension, s.card_unit)
        if s.key in gone
        else s
        for s in metrics.CATALOG
    )
    import ncu_classify.read.kernels as reader

    original = reader.CATALOG
    reader.CATALOG = catalog
    try:
        card = classify([SMOKE / "output.ncu-rep.xz"], rules, jobs=1).cards[0]
    finally:
        reader.CATALOG = original
    kernel = card.kernels[0]
    assert kernel.metrics["tensor_pct"] is None and kernel.evidence["tensor_pct"] is None
    assert kernel.missing_metrics == ["tensor_pct", "tensor_active_pct", *ROOFLINE_KEYS]
    assert card.missing_metrics == sorted(["tensor_active_pct", "tensor_pct", *ROOFLINE_KEYS])
    # no rule needed it: sm_pct (its upper bound by definition) settled each comparison
    assert kernel.unchecked_metrics == []
    assert kernel.classification == "dram_bandwidth_bound"


def test_reader_batches_balance_bytes_and_bound_each_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Largest reports first to the lightest worker; each worker's share cut under the caps."""
    from ncu_classify.read import parallel as module
    from ncu_classify.read.slices import ReadUnit

    paths = []
    for i, size in enumerate([900, 100, 100, 100, 100, 100, 100, 100, 100, 100]):
        path = tmp_path / f"r{i}.ncu-rep"
        path.write_bytes(b"x" * size)
        paths.append(path)
    units = [ReadUnit(path, path) for path in paths]
    batches = module.reader_batches(units, 2)
    assert [[i for i, _ in b] for b in batches] == [[0], [1, 2, 3, 4, 5, 6, 7, 8, 9]]
    monkeypatch.setattr(module, "REPORTS_PER_WORKER", 4)
    assert [len(b) for b in module.reader_batches(units, 2)] == [1, 4, 4, 1]
    monkeypatch.setattr(module, "BYTES_PER_WORKER", 250)
    assert [len(b) for b in module.reader_batches(units, 1)] == [1] + [2] * 4 + [1]
    flat = sorted(i for b in module.reader_batches(units, 3) for i, _ in b)
    assert flat == list(range(10))


def test_parallel_reads_come_back_in_input_order(rules: LoadedRules) -> None:
    from ncu_classify.read.parallel import read_all
    from ncu_classify.verdicts.judge import kernel_card

    paths = sorted(SMOKE.glob("*.ncu-rep.xz")) * 2
    classify = partial(kernel_card, rules=rules)
    serial = [
        [(row.report, c.classification) for row, c in r] for r in read_all(paths, 1, classify)
    ]
    parallel = [
        [(row.report, c.classification) for row, c in r] for r in read_all(paths, 3, classify)
    ]
    assert serial == parallel
    assert [r[0][0] for r in serial] == [str(p) for p in paths]
    # classified where read, as classify does: the DiT report's three kernels
    assert [c for _, c in serial[1]] == [
        "compute_bound", "unresolved_no_dominant_limiter", "dram_bandwidth_bound"
    ]  # fmt: skip


def test_written_cards_validate_against_the_models(tmp_path: Path, rules: LoadedRules) -> None:
    """Cards are built without re-validation on the hot path; the file must still validate."""
    from ncu_classify.cards.files import write_card_file

    cards = classify([SMOKE, USER_FULL], rules, jobs=2)
    out = tmp_path / "cards.json"
    write_card_file(out, cards)
    again = CardFile.model_validate_json(out.read_text())
    assert again.model_dump(mode="json") == cards.model_dump(mode="json")
    assert len(again.cards) == 15


def test_gzip_and_plain_reports_read_like_xz(tmp_path: Path, rules: LoadedRules) -> None:
    import gzip

    data = lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes())
    (tmp_path / "gz").mkdir()
    (tmp_path / "plain").mkdir()
    (tmp_path / "gz" / "dit.ncu-rep.gz").write_bytes(gzip.compress(data))
    (tmp_path / "plain" / "dit.ncu-rep").write_bytes(data)
    cards = [classify([tmp_path / kind], rules, jobs=1).cards for kind in ("gz", "plain")]
    cards.append(classify([SMOKE / "dit.ncu-rep.xz"], rules, jobs=1).cards)
    durations = [[c.summed_kernel_us for c in run] for run in cards]
    assert durations == [[303.008, 25.088, 77.856]] * 3
