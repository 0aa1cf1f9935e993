"""The roofline on a real capture with the roofline counters (fixtures/roofline_h200, 12 passes):
each figure recomputed here from the raw report through ncu_report itself (issue 8, items 2-4)."""

from __future__ import annotations

import json
import lzma

import ncu_report
import pytest
from helpers import ROOT

from ncu_classify.cards.figures import Roofline
from ncu_classify.cards.hot_units import HotUnit
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.judge import compute_note, judge
from ncu_classify.verdicts.rules import LoadedRules

FOLDER = ROOT / "fixtures" / "roofline_h200"
GEMM = "dit:linear:M4680_N5120_K5120:bf16:bias"
SKINNY = "dit:linear:M3_N30720_K5120:bf16:bias"
CAST = "output:cast:1x3x13x480x832:fp32-bf16"
HGMMA_BF16 = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum"


@pytest.fixture(scope="module")
def cards(rules: LoadedRules) -> dict:
    return {c.group: c for c in classify([FOLDER], rules, jobs=1).cards}


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    """Every numeric metric of each kernel, by its NVTX range, straight from ncu_report."""
    plain = tmp_path_factory.mktemp("roof") / "all.ncu-rep"
    plain.write_bytes(lzma.decompress((FOLDER / "all.ncu-rep.xz").read_bytes()))
    ctx = ncu_report.load_report(str(plain))
    out: dict[str, dict[str, float]] = {}
    for r in range(ctx.num_ranges()):
        for a in range(ctx.range_by_idx(r).num_actions()):
            action = ctx.range_by_idx(r).action_by_idx(a)
            ranges = list(action.nvtx_state().domain_by_id(0).push_pop_ranges())
            values = {}
            for name in action.metric_names():
                metric = action.metric_by_name(name)
                if metric.has_value() and isinstance(metric.value(), (int, float)):
                    values[name] = float(metric.value())
            out.setdefault(ranges[-1], values)  # the first kernel of a range
    return out


def _executed(m: dict[str, float]) -> float:
    """Every family's FLOPs: the tensor counters plus CUDA-core FP32 (an FMA is 2 FLOPs)."""
    tensor = sum(v for k, v in m.items() if k.startswith("sm__ops_path_tensor_op_h") and
                 k.endswith("sparsity_off.sum"))  # fmt: skip
    fp32 = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
    return tensor + 2 * m[fp32.format("ffma")] + m[fp32.format("fadd")] + m[fp32.format("fmul")]


def _dominant(card):  # type: ignore[no-untyped-def]
    return next(k for k in card.kernels if k.kernel == card.dominant_kernel)


def test_twelve_passes_with_the_roofline_counters() -> None:
    manifest = json.loads((FOLDER / "manifest.json").read_text())
    assert {p for s in manifest["shapes"] for p in s["replay_passes"]} == {12}


def test_bf16_gemm_on_the_roofline(cards: dict, raw: dict) -> None:
    """4680x5120x5120 bf16 GEMM + bias: wgmma at 94 % of its compute roof."""
    m = raw[GEMM]
    card = cards[GEMM]
    roof = _dominant(card).roofline
    flops = _executed(m)
    seconds = m["gpu__time_duration.sum"] * 1e-9
    ceiling = m[f"{HGMMA_BF16}.peak_sustained"] * m["sm__cycles_elapsed.avg.per_second"]
    assert roof.family == "hgmma_bf16" and roof.executed_flops == pytest.approx(flops)
    assert m[HGMMA_BF16] / (2 * 4680 * 5120 * 5120) == pytest.approx(1.0154, abs=1e-4)  # padding
    assert flops - m[HGMMA_BF16] == 24330240  # the bias epilogue on the CUDA cores
    assert roof.achieved_tflops == pytest.approx(flops / seconds / 1e12, rel=1e-5)
    assert roof.compute_ceiling_tflops == pytest.approx(ceiling / 1e12, rel=1e-5)
    assert roof.intensity["dram"] == pytest.approx(flops / m["dram__bytes.sum"], rel=1e-5)
    assert roof.binding == "compute"
    assert roof.pct_of_roof == pytest.approx(100 * flops / seconds / ceiling, rel=1e-5)
    assert roof.pct_of_roof == pytest.approx(94.3955, abs=1e-3)
    assert [h.label for h in _dominant(card).hot_units["sm"]][:1] == ["tensor pipe"]
    assert card.primary == "compute_bound" and _dominant(card).verdict_note is None


def test_skinny_gemm_is_under_the_dram_roof(cards: dict, raw: dict) -> None:
    """M=3: 8 FLOP per DRAM byte; the DRAM roof (bytes/cycle x the DRAM clock) binds."""
    m = raw[SKINNY]
    roof = _dominant(cards[SKINNY]).roofline
    bandwidth = m["dram__bytes.sum.peak_sustained"] * m["dram__cycles_elapsed.avg.per_second"]
    intensity = _executed(m) / m["dram__bytes.sum"]
    assert roof.bandwidth_tbps["dram"] == pytest.approx(bandwidth / 1e12, rel=1e-5)
    assert roof.intensity["dram"] == pytest.approx(intensity, rel=1e-5)
    assert roof.binding == "dram"
    assert roof.roof_tflops == pytest.approx(bandwidth * intensity / 1e12, rel=1e-5)
    assert roof.pct_of_roof == pytest.approx(86.8065, abs=1e-3)
    # executed FLOPs pad M=3 to the tile: useful work is a fraction of what ran
    assert 2 * 3 * 30720 * 5120 / m[HGMMA_BF16] < 0.5


def test_a_copy_is_placed_by_its_bandwidth(cards: dict, raw: dict) -> None:
    """No FLOPs: the cast sits at the share of the DRAM bandwidth it moves."""
    m = raw[CAST]
    roof = _dominant(cards[CAST]).roofline
    moved = m["dram__bytes.sum"] / (m["gpu__time_duration.sum"] * 1e-9)
    bandwidth = m["dram__bytes.sum.peak_sustained"] * m["dram__cycles_elapsed.avg.per_second"]
    assert roof.family is None and roof.binding == "dram"
    assert roof.pct_of_roof == pytest.approx(100 * moved / bandwidth, rel=1e-5)


def test_mma_sync_kernels_get_the_mma_sync_ceiling(cards: dict, raw: dict) -> None:
    """PyTorch's flash kernel runs mma.sync (hmma): its ceiling is 2/3 of wgmma's."""
    group = "attention:sdpa_flash:self_b1_h40_d128_q4680_k4680of29640:bf16"
    roof = _dominant(cards[group]).roofline
    assert roof.family == "hmma_bf16"
    m = raw[group]
    hmma = m["sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained"]
    assert hmma / m[f"{HGMMA_BF16}.peak_sustained"] == pytest.approx(2 / 3)


def test_a_compute_bound_verdict_names_a_non_math_hot_unit() -> None:
    issue = HotUnit(unit="sm__issue_active", pct=77.95, label="instruction issue", kind="issue")
    roof = Roofline(
        family="fp32",
        executed_flops=5.2e11,
        achieved_tflops=2.69838,
        intensity={},
        compute_ceiling_tflops=66.43,
        bandwidth_tbps={},
        achieved_tbps={},
        binding="l2",
        roof_tflops=28.1129,
        pct_of_roof=9.59836,
    )  # fmt: skip  (the depthwise fp32 conv3d measured in reports/roofline/)
    assert compute_note("compute_bound", {"sm": [issue]}, roof) == (
        "compute-bound by SM throughput, but the busiest SM unit is instruction issue"
        " (sm__issue_active, 78.0 %), not a math pipe: 2.69838 TFLOP/s, 9.6 % of its l2 roof"
    )
    tensor = HotUnit(unit="sm__pipe_tensor_cycles_active", pct=90, label="tensor pipe", kind="math")
    assert compute_note("compute_bound", {"sm": [tensor]}, roof) is None
    assert compute_note("dram_bandwidth_bound", {"sm": [issue]}, roof) is None


def test_old_reports_say_what_their_roofline_lacks(rules: LoadedRules) -> None:
    card = classify([ROOT / "fixtures" / "smoke_h200" / "dit.ncu-rep.xz"], rules, jobs=1).cards[0]
    roof = card.kernels[0].roofline
    assert roof.pct_of_roof is None and roof.binding is None
    assert "flops_hgmma_bf16" in roof.missing and "dram_bytes" in roof.missing
    assert card.kernels[0].hot_units == {}


def test_card_level_useful_work_and_mfu(cards: dict, raw: dict) -> None:
    """MFU: the shape's nominal FLOPs over its summed kernel time, against the dense wgmma bf16
    peak at the clock measured during the kernel; useful over executed FLOPs."""
    card = cards[GEMM]
    m = raw[GEMM]
    nominal = 2 * 4680 * 5120 * 5120
    peak = m[f"{HGMMA_BF16}.peak_sustained"] * m["sm__cycles_elapsed.avg.per_second"]
    seconds = card.summed_kernel_us * 1e-6
    assert card.nominal_mac_flops == nominal
    assert card.roofline.peak_tflops == pytest.approx(peak / 1e12, rel=1e-5)
    assert card.roofline.mfu_pct == pytest.approx(100 * nominal / seconds / peak, rel=1e-5)
    assert card.roofline.useful_over_executed == pytest.approx(nominal / _executed(m), rel=1e-5)
    # TF32 convs are measured against the TF32 wgmma peak (half the bf16 one)
    conv = cards["vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:cl3d"]
    tf32 = raw[conv.group]
    ratio = (
        tf32[f"{HGMMA_BF16}.peak_sustained"]
        / tf32["sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained"]
    )
    assert ratio == 2 and conv.roofline.useful_over_executed == pytest.approx(0.746101)


def test_refined_rules_name_the_unit(rules: LoadedRules) -> None:
    """rules/roofline.yaml on the same capture: compute-bound becomes tensor-pipe bound where
    the tensor pipe is the busy unit; the memory verdicts stay."""
    from ncu_classify.verdicts.rules import load_rules

    refined = classify([FOLDER], load_rules(ROOT / "rules" / "roofline.yaml"), jobs=1).cards
    legacy = classify([FOLDER], rules, jobs=1).cards
    changed = {
        c.group: (old.primary, c.primary)
        for c, old in zip(refined, legacy, strict=True)
        if c.primary != old.primary
    }
    assert changed == {
        GEMM: ("compute_bound", "tensor_pipe_bound"),
        "vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32": (
            "compute_bound",
            "tensor_pipe_bound",
        ),
        "vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:cl3d": (
            "compute_bound",
            "tensor_pipe_bound",
        ),
        "attention:sdpa_cudnn:self_b1_h40_d128_q4680_k4680of29640:bf16": (
            "compute_bound",
            "tensor_pipe_bound",
        ),
    }


def test_refined_rules_on_a_depthwise_conv_and_a_small_grid() -> None:
    """Figures of conv_depthwise3d_cuda_kernel measured on the H200 (reports/roofline/): SM
    throughput 78 % from instruction issue, tensor pipe idle; legacy: compute-bound."""
    from ncu_classify.verdicts.rules import evaluate, load_rules

    refined = load_rules(ROOT / "rules" / "roofline.yaml").rules
    depthwise = {"tensor_pct": 0.0, "fma_pipe_pct": 21.0, "issue_pct": 77.95, "sm_pct": 77.95,
                 "dram_pct": 9.6, "l2_pct": 28.1, "waves": 20.0}  # fmt: skip
    assert evaluate(refined, depthwise).rule.name == "issue_bound"
    small = {"tensor_pct": 32.2, "fma_pipe_pct": 0.0, "issue_pct": 10.0, "sm_pct": 32.2,
             "dram_pct": 5.0, "l2_pct": 20.0, "l1_pipe_pct": 10.0, "waves": 0.59}  # fmt: skip
    assert evaluate(refined, small).rule.name == "grid_under_one_wave"


def test_a_users_set_full_report_gets_a_roofline_too(rules: LoadedRules, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`--set full` keeps DRAM bytes and FP32 instructions only as rates: they are turned back
    into counts (rate x duration, per-cycle x the unit's cycles) and say so; its GEMM lands at
    the tensor pipe's own figure over elapsed cycles."""
    report = ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz"
    gemm = classify([report], rules, jobs=1).cards[0].kernels[0]
    plain = tmp_path / "full.ncu-rep"
    plain.write_bytes(lzma.decompress(report.read_bytes()))
    action = ncu_report.load_report(str(plain)).range_by_idx(0).action_by_idx(0)
    raw = {n: action.metric_by_name(n).value() for n in action.metric_names()}
    seconds = raw["gpu__time_duration.sum"] * 1e-9
    assert gemm.metrics["dram_bytes"] == pytest.approx(raw["dram__bytes.sum.per_second"] * seconds)
    assert gemm.metric_sources["dram_bytes"] == "dram__bytes.sum.per_second x duration"
    roof = gemm.roofline
    assert (roof.family, roof.binding) == ("hgmma_bf16", "compute")
    assert roof.pct_of_roof == pytest.approx(gemm.metrics["tensor_pct"], rel=1e-4)
    assert roof.intensity["l1"] is None and "l1_bytes" in roof.missing  # not in --set full
    assert gemm.metric_sources["l2_bytes"] == "lts__t_sectors.sum x 32"
    assert gemm.metrics["peak_ffma"] == 16896  # under its --set full name


def test_unit_loads_and_hot_units_are_the_reports_own(cards: dict, raw: dict) -> None:
    """The unit loads the refined rules read, and the hot units, as ncu_report gives them."""
    card = cards[SKINNY]
    kernel = _dominant(card)
    m = raw[SKINNY]
    suffix = ".avg.pct_of_peak_sustained_elapsed"
    for key, counter in (
        ("issue_pct", "sm__issue_active"),
        ("fma_pipe_pct", "sm__pipe_fma_cycles_active"),
        ("alu_pipe_pct", "sm__pipe_alu_cycles_active"),
        ("l1_pipe_pct", "l1tex__data_pipe_lsu_wavefronts"),
    ):
        assert kernel.metrics[key] == pytest.approx(m[counter + suffix])
    top = kernel.hot_units["sm"][0]
    assert (top.label, top.kind) == ("instruction issue", "issue")
    assert top.pct == pytest.approx(m[top.unit + suffix], rel=1e-5)


@pytest.mark.parametrize("value", [0.0, -4.8])  # a negative one too (issue 37)
@pytest.mark.parametrize("zero", ["peak_dram_bytes", "dram_clock_ghz"])
def test_a_peak_or_clock_of_0_in_a_card_is_unknown(
    cards: dict, rules: LoadedRules, zero: str, value: float
) -> None:
    """A cards file from elsewhere may carry a peak or a clock of 0 (ncu's own 0 peaks are
    dropped when read): judged again, the copy without FLOPs lost its DRAM figures but kept its
    place by the other levels, where a division by that 0 used to end in an internal error."""
    card = cards[CAST]
    kernel = card.kernels[0]
    edited = kernel.model_copy(update={"metrics": {**kernel.metrics, zero: value}})
    judged = judge(card.model_copy(update={"kernels": [edited]}), rules)
    before, after = kernel.roofline, judged.kernels[0].roofline
    assert before.binding == "dram" and after.binding in ("l1", "l2")
    assert after.bandwidth_tbps["dram"] is None and after.achieved_tbps["dram"] is None
    assert zero in after.missing and zero not in before.missing
    assert after.bandwidth_tbps["l2"] == before.bandwidth_tbps["l2"]
