"""`ncu-classify project`: the committed H200 cards of the 480x832 workload projected onto the
GPU table's other GPUs, with factors worked out by hand from the table (data/gpus.yaml)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.gpus import gpu_spec, gpu_table
from ncu_classify.cards.model import CardFile, KernelCard
from ncu_classify.cards.projection import Ratios, project, project_kernel, source_gpu
from ncu_classify.cli import run

CARDS = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
DRAM_CARD = "dit:linear:M3_N30720_K5120:bf16:bias"  # one nvjet GEMV, DRAM-bound
GEMM_CARD = "dit:linear:M4680_N5120_K5120:bf16:bias"  # one wgmma GEMM, compute-bound
WAVE_CARD = "dit:linear:M4680_N5120_K144:bf16:bias"  # 132 CTAs, 1 wave, unresolved


@pytest.fixture(scope="module")
def measured() -> CardFile:
    return load_card_file(CARDS)


def _onto(cards: CardFile, target: str) -> CardFile:
    return project(cards, str(CARDS), source_gpu(cards, CARDS, None), gpu_spec(target))


def _kernel(cards: CardFile, group: str) -> KernelCard:
    (kernel,) = next(c for c in cards.cards if c.group == group).kernels
    return kernel


def test_the_h200_entry_agrees_with_the_committed_h200_reports(measured: CardFile) -> None:
    h200 = gpu_table()["H200"]
    gpu = measured.cards[0].gpu
    assert (gpu.name, gpu.sm_count, gpu.l2_bytes) == ("NVIDIA H200", 132, 62914560)
    assert h200.sm_count.value == gpu.sm_count and h200.l2_bytes.value == gpu.l2_bytes
    assert h200.sm_clock_max_mhz.value == 1980 and gpu.sm_clock_max_khz == 1980000
    kernels = [k for c in measured.cards for k in c.kernels if k.roofline is not None]
    dram = statistics.median(k.roofline.bandwidth_tbps["dram"] for k in kernels)  # type: ignore[union-attr]
    l2 = statistics.median(k.roofline.bandwidth_tbps["l2"] for k in kernels)  # type: ignore[union-attr]
    assert abs(dram / 4.8 - 1) < 0.01  # ncu's measured DRAM peak against the datasheet's
    assert abs(l2 / 15.39 - 1) < 0.02  # the derived L2 figure against ncu's
    assert all(spec.sm_count.source and spec.dram_tbps.source for spec in gpu_table().values())


def test_a_dram_bound_kernel_onto_an_h100_takes_the_bandwidth_ratio(measured: CardFile) -> None:
    h100 = _onto(measured, "H100-SXM")
    kernel = _kernel(h100, DRAM_CARD)
    assert kernel.projection is not None
    assert (kernel.projection.rule, kernel.projection.factor) == ("dram", 1.432836)  # 4.8/3.35
    assert kernel.projection.source_us == 79.456
    assert kernel.metrics["dur_us"] == round(79.456 * 1.432836, 6) == 113.847417
    card = next(c for c in h100.cards if c.group == DRAM_CARD)
    assert card.summed_kernel_us == 113.847417 and card.gpu.name == "NVIDIA H100 80GB HBM3"
    before, after = _kernel(measured, DRAM_CARD).roofline, kernel.roofline
    assert before is not None and after is not None
    assert before.bandwidth_tbps["dram"] == 4.8085  # ncu's, on the H200
    assert after.bandwidth_tbps["dram"] == float(f"{4.8085 / 1.432836:.6g}") == 3.35593
    assert after.binding == before.binding == "dram"  # at the same share of the lower roof
    assert after.pct_of_roof == pytest.approx(before.pct_of_roof, 1e-5)


def test_a_tensor_bound_gemm_keeps_its_time_on_an_h100_and_not_on_an_a100(
    measured: CardFile,
) -> None:
    h100 = _kernel(_onto(measured, "H100-SXM"), GEMM_CARD)
    a100 = _kernel(_onto(measured, "A100-SXM4-80GB"), GEMM_CARD)
    assert h100.projection and (h100.projection.rule, h100.projection.factor) == ("compute", 1.0)
    assert h100.metrics["dur_us"] == 304.992
    assert a100.projection and a100.projection.factor == 3.171154  # 989.4 / 312 (bf16 dense)
    assert a100.metrics["dur_us"] == round(304.992 * 3.171154, 6)


def test_a_132_cta_grid_is_two_waves_on_the_108_sms_of_an_a100(measured: CardFile) -> None:
    kernel = _kernel(measured, WAVE_CARD)
    assert (kernel.metrics["grid"], kernel.metrics["waves"]) == (132.0, 1.0)
    a100 = _kernel(_onto(measured, "A100-SXM4-80GB"), WAVE_CARD)
    assert a100.projection and a100.projection.rule == "latency"
    assert a100.projection.factor == round(1980 / 1410 * 2 / 1, 6) == 2.808511
    h100 = _kernel(_onto(measured, "H100-SXM"), WAVE_CARD)
    assert h100.projection and h100.projection.factor == 1.0  # 132 SMs: one wave, same clock


def test_no_kernel_beats_the_target_roof_it_uses(measured: CardFile) -> None:
    """A latency-bound kernel keeps its clocks, but one that moved DRAM at most of the H200's
    peak cannot move it faster than the H100's: the DRAM floor lifts it."""
    dram = _kernel(measured, DRAM_CARD)
    latency = dram.model_copy(update={"classification": "latency_or_occupancy_limited"})
    roof = dram.roofline
    assert roof is not None
    share = roof.achieved_tbps["dram"] / roof.bandwidth_tbps["dram"]  # type: ignore[operator]
    ratios = Ratios(gpu_table()["H200"], gpu_table()["H100-SXM"])
    done = project_kernel(latency, ratios)
    assert (done.rule, done.floor) == ("latency", "dram")
    assert done.factor == round(min(share, 1.0) * 4.8 / 3.35, 6) and done.factor > 1.0


def test_what_the_model_cannot_project_is_listed_not_guessed(measured: CardFile) -> None:
    b200 = _onto(measured, "B200")
    assert b200.projection is not None
    assert (b200.projection.kernels, b200.projection.projected_kernels) == (78, 65)
    whys = {u.why for u in b200.projection.unprojected}
    assert whys == {"the GPU table has no L2 bandwidth for NVIDIA B200 (HGX B200, 1000 W)"}
    kernels = [k for card in b200.cards for k in card.kernels]
    assert sum(k.metrics["dur_us"] is None for k in kernels) == 13
    for kernel in kernels:
        assert kernel.projection is not None
        assert (kernel.projection.rule is None) == (kernel.metrics["dur_us"] is None)
        assert kernel.projection.rule != "l2"
    for card in b200.cards:
        if any(k.metrics["dur_us"] is None for k in card.kernels):
            assert card.summed_kernel_us is None and "not projected" in card.notes[-1]
    gemm = _kernel(measured, GEMM_CARD)
    assert gemm.roofline is not None
    mma_sync = gemm.model_copy(
        update={"roofline": gemm.roofline.model_copy(update={"family": "hmma_bf16"})}
    )
    ratios = Ratios(gpu_table()["H200"], gpu_table()["A100-SXM4-80GB"])
    done = project_kernel(mma_sync, ratios)
    assert done.rule is None and done.factor is None
    assert done.why == (
        "hmma_bf16 is mma.sync, whose peak no datasheet gives across compute capabilities"
        " (9.0 -> 8.0)"
    )


def test_h200_onto_h200_is_the_identity(measured: CardFile) -> None:
    same = _onto(measured, "H200")
    assert same.projection and same.projection.projected_kernels == 78
    for before, after in zip(measured.cards, same.cards, strict=True):
        assert after.summed_kernel_us == before.summed_kernel_us
        for k0, k1 in zip(before.kernels, after.kernels, strict=True):
            assert k1.projection and k1.projection.factor == 1.0
            assert k1.metrics == k0.metrics
            if k0.roofline is not None:  # found again from the same figures: within rounding
                assert k1.roofline is not None and k1.roofline.binding == k0.roofline.binding
                assert k1.roofline.pct_of_roof == pytest.approx(k0.roofline.pct_of_roof, 1e-5)
        if before.roofline is not None and before.roofline.mfu_pct is not None:
            assert after.roofline is not None
            assert after.roofline.mfu_pct == pytest.approx(before.roofline.mfu_pct, 1e-5)


def test_the_cli_writes_a_marked_projection_byte_identical_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert run(["project", str(CARDS), "--to", "H100-SXM", "-o", str(first)]) == 0
    assert run(["project", str(CARDS), "--to", "h100-sxm", "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()  # no clock: generated_at is the source's
    doc = json.loads(first.read_text())
    assert doc["schema_version"] == "1.10"
    assert (doc["projection"]["source"], doc["projection"]["target"]) == ("H200", "H100-SXM")
    assert doc["projection"]["target_gpu"]["dram_tbps"]["value"] == 3.35
    out = capsys.readouterr().out
    assert "projected: onto H100-SXM from H200 cards" in out
    assert "projected 78 kernels of 78 from H200 onto H100-SXM; wrote 34 cards" in out


def test_diff_and_next_read_a_projection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    projected = tmp_path / "h100.json"
    assert run(["project", str(CARDS), "--to", "H100-SXM", "-o", str(projected)]) == 0
    assert run(["diff", str(CARDS), str(projected), "-o", str(tmp_path / "d.json")]) == 0
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["candidate"]["gpu"]["name"] == "NVIDIA H100 80GB HBM3"
    shape = next(s for s in doc["shapes"] if (s["baseline"] or {}).get("group") == DRAM_CARD)
    assert shape["candidate"]["summed_kernel_us"] == 113.847417
    assert shape["duration_ratio"] == pytest.approx(1.432836, abs=1e-4)
    assert run(["diff", str(CARDS), str(projected), "-o", str(tmp_path / "d.md")]) == 0
    assert "candidate: h100.json (34 cards; projected: onto H100-SXM" in (
        (tmp_path / "d.md").read_text().replace("\\", "")
    )
    capsys.readouterr()
    assert run(["next", str(projected)]) == 0
    assert "projected: onto H100-SXM from H200 cards" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (["--to", "H900"], 2, "--to 'H900': not a GPU of the table; known: H100-SXM, H200,"
         " A100-SXM4-80GB, B200"),
        (["--to", "H200", "--from", "MI300"], 2, "--from 'MI300': not a GPU of the table"),
    ],
)  # fmt: skip
def test_an_unknown_gpu_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, line: str
) -> None:
    assert run(["project", str(CARDS), *args, "-o", str(tmp_path / "o.json")]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ncu-classify: error: {line}")
    assert not (tmp_path / "o.json").exists()


def test_cards_it_cannot_project_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(CARDS.read_text())
    for card in doc["cards"]:
        card["gpu"]["name"] = "NVIDIA RTX 6000 Ada Generation"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(doc))
    out = tmp_path / "o.json"
    assert run(["project", str(foreign), "--to", "H100-SXM", "-o", str(out)]) == 3
    assert capsys.readouterr().err.strip() == (
        f"ncu-classify: error: {foreign}: measured on NVIDIA RTX 6000 Ada Generation, which the"
        " GPU table lacks; name the table's GPU it is with --from"
    )
    assert run(["project", str(foreign), "--from", "H200", "--to", "H100-SXM", "-o", str(out)]) == 0
    legacy = ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json"
    capsys.readouterr()
    assert run(["project", str(legacy), "--to", "H100-SXM", "-o", str(tmp_path / "l.json")]) == 3
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"ncu-classify: error: {legacy}: legacy cards carry no roofline or GPU to project;"
        " classify the reports"
    )
    assert run(["project", str(out), "--to", "H200", "-o", str(tmp_path / "again.json")]) == 3
    assert capsys.readouterr().err.strip() == (
        f"ncu-classify: error: {out}: already a projection (onto H100-SXM)"
    )


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("cards.csv", "writes JSON, but .csv names CSV"),
        (str(CARDS), "is also an input"),
    ],
)
def test_odd_outputs_are_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], output: str, message: str
) -> None:
    assert run(["project", str(CARDS), "--to", "H100-SXM", "-o", output]) == 2
    assert message in capsys.readouterr().err


def test_the_report_names_a_projection_and_whence_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = tmp_path / "a.json", tmp_path / "b.json"
    assert run(["project", str(CARDS), "--to", "A100-SXM4-80GB", "-o", str(here)]) == 0
    monkeypatch.chdir(CARDS.parent)
    assert run(["project", "cards.json", "--to", "A100-SXM4-80GB", "-o", str(there)]) == 0
    assert here.read_bytes() == there.read_bytes()
    page = tmp_path / "page.md"
    assert run(["report", str(here), "-o", str(page)]) == 0
    assert (
        "  - **projected: onto A100-SXM4-80GB from H200 cards"
        r" (workload\_h200\_480x832/cards.json): a model, not a"
        " measurement; 78 of 78 kernels projected**" in page.read_text()
    )


def test_a_figure_without_its_source_is_refused(tmp_path: Path) -> None:
    from ncu_classify.cards.gpus import GPU_TABLE
    from ncu_classify.core.errors import GpuTableError

    text = GPU_TABLE.read_text().replace(
        "sm_count: {value: 108, source: ", "sm_count: {value: 108, sourse: ", 1
    )
    bad = tmp_path / "gpus.yaml"
    bad.write_text(text)
    with pytest.raises(GpuTableError) as caught:
        gpu_table(bad)
    assert str(caught.value).startswith(f"{bad}:")
    assert "A100-SXM4-80GB.sm_count" in str(caught.value)


@pytest.mark.parametrize("gpu", ["H100-SXM", "A100-SXM4-80GB"])
def test_the_committed_projection_summaries_are_what_project_writes(
    derived_cards: Path, tmp_path: Path, gpu: str
) -> None:
    """reports/project: the recorded Wan 14B cards (regenerate.sh's, the session's own here)
    projected onto the GPU, summed per stage and class, equal the committed summary; every
    kernel projected."""
    projected, summary = tmp_path / "p.json", tmp_path / "s.csv"
    source = derived_cards / "cards_wan_480x832.json"
    assert run(["project", str(source), "--to", gpu, "-o", str(projected)]) == 0
    assert run(["summary", str(projected), "--csv", "-o", str(summary)]) == 0
    committed = ROOT / "reports" / "project" / f"summary_wan_480x832_{gpu}.csv"
    assert summary.read_text() == committed.read_text()
    done = load_card_file(projected).projection
    assert done is not None and (done.kernels, done.projected_kernels) == (136, 136)


def test_cards_of_another_gpu_or_of_two_gpus_are_refused_not_projected_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--from must be the GPU the cards ran on (its SM count and compute capability: the
    waves and every ratio are the table's), and a file of two GPUs is not projected as the
    first card's GPU."""
    out = tmp_path / "o.json"
    assert run(["project", str(CARDS), "--from", "A100", "--to", "H200", "-o", str(out)]) == 2
    capsys.readouterr()
    args = ["project", str(CARDS), "--from", "A100-SXM4-80GB", "--to", "H200", "-o", str(out)]
    assert run(args) == 3
    assert capsys.readouterr().err.strip() == (
        f"ncu-classify: error: {CARDS}: cards[0] was measured on NVIDIA H200 (132 SMs, compute"
        " capability 9.0), not on A100-SXM4-80GB (108 SMs, compute capability 8.0): --from"
        " names the GPU the cards ran on"
    )
    doc = json.loads(CARDS.read_text())
    doc["cards"][-1]["gpu"]["name"] = "NVIDIA H100 80GB HBM3"
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(doc))
    assert run(["project", str(mixed), "--to", "A100-SXM4-80GB", "-o", str(out)]) == 3
    assert capsys.readouterr().err.strip() == (
        f"ncu-classify: error: {mixed}: measured on 2 GPUs (NVIDIA H100 80GB HBM3, NVIDIA H200);"
        " project the cards of one GPU at a time"
    )
    assert not out.exists()


class _Interrupting:
    """A WRITE_ORDER whose reading is interrupted (SIGTERM while a card's GPU is written)."""

    def __iter__(self) -> Iterator[str]:
        raise KeyboardInterrupt


def test_an_interrupt_while_the_cards_are_written_is_exit_130_not_a_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pydantic reports a KeyboardInterrupt raised in a serializer as a
    PydanticSerializationError: a SIGTERM 15 s into a 40,800-kernel projection was an
    "internal error ... (a bug)", exit 1."""
    from ncu_classify.cards.machine import GpuInfo

    monkeypatch.setattr(GpuInfo, "WRITE_ORDER", _Interrupting())
    out = tmp_path / "o.json"
    assert run(["project", str(CARDS), "--to", "H100-SXM", "-o", str(out)]) == 130
    assert capsys.readouterr().err == "ncu-classify: interrupted\n"
    assert not out.exists()
