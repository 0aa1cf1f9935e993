"""Ceilings never above physics, and MFU says its clock (issue 15, item 6).

A measured clock is cycles over ncu's duration: on short kernels it reads above the device's
maximum (device__attribute_max_gpu_frequency_khz = 1,980,000 on the H200, nvidia-smi's
clocks.max.sm 1980 MHz). Of every kernel of the committed H200 reports (fixtures/*/), three do:
the 44 us AbsFunctor cast of fixtures/user_set_full (2.034 GHz), the reduce_kernel of
gemm8192_set_full (1.993 GHz) and the output cast of h200_rerun_full (1.993 GHz).
"""

from __future__ import annotations

import lzma

import ncu_report
import pytest
from helpers import ROOT

from ncu_classify.cards.machine import GpuInfo
from ncu_classify.cards.model import Card, CardFile
from ncu_classify.present.frames import cards_frame
from ncu_classify.present.page import page_html
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.judge import judge
from ncu_classify.verdicts.roofline import device_max_ghz, kernel_roofline
from ncu_classify.verdicts.rules import LoadedRules

USER_FULL = ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz"
SET_FULL = ROOT / "fixtures" / "set_full_h200"
GEMM = "dit:linear:M4680_N5120_K5120:bf16:bias"
CAST = "linear_cast:vectorized_elementwise_kernel"
FLAG = (
    "{key} {seen} GHz measured over {us} us is above the device's maximum SM clock{l1} 1.98 GHz:"
    " the ceilings use 1.98 GHz"
)


def _flags(seen: str, us: str) -> list[str]:
    return [
        FLAG.format(key="sm_clock_ghz", seen=seen, us=us, l1=""),
        FLAG.format(key="l1_clock_ghz", seen=seen, us=us, l1=" (L1TEX runs on it)"),
    ]


@pytest.fixture(scope="module")
def user_cards(rules: LoadedRules) -> dict[str, Card]:
    return {c.group: c for c in classify([USER_FULL], rules, jobs=1).cards}


def test_the_report_carries_the_device_maximum(user_cards: dict[str, Card], tmp_path) -> None:  # type: ignore[no-untyped-def]
    plain = tmp_path / "full.ncu-rep"
    plain.write_bytes(lzma.decompress(USER_FULL.read_bytes()))
    action = ncu_report.load_report(str(plain)).range_by_idx(0).action_by_idx(2)
    assert action.metric_by_name("device__attribute_max_gpu_frequency_khz").value() == 1980000
    assert action.metric_by_name("device__attribute_memory_clock_rate").value() == 3201000
    rate = action.metric_by_name("sm__cycles_elapsed.avg.per_second").as_double()
    assert rate == pytest.approx(2.03414617173e9) and rate > 1.98e9
    gpu = user_cards[CAST].gpu
    assert (gpu.sm_clock_max_khz, gpu.dram_clock_max_khz) == (1980000, 3201000)


def test_a_clock_above_the_maximum_is_capped_and_flagged(user_cards: dict[str, Card]) -> None:
    """Before: the FP32 ceiling of the cast was 16,896 x 2 x 2.034 GHz = 68.74 TFLOP/s, above
    what the GPU can do (66.91 at 1.98 GHz), and nothing said so."""
    kernel = user_cards[CAST].kernels[0]
    roof = kernel.roofline
    assert roof is not None and kernel.metrics["sm_clock_ghz"] == 2.03414617173  # kept as seen
    assert roof.ceiling_sm_clock_ghz == 1.98
    assert roof.clock_flags == _flags("2.03415", "44.416")
    assert roof.compute_ceiling_tflops == pytest.approx(16896 * 2 * 1.98e9 / 1e12, rel=1e-6)
    assert roof.compute_ceiling_tflops == 66.9082
    # the DRAM clock, 3.19669 GHz, is under the memory clock of 3.201 GHz: not capped
    assert roof.bandwidth_tbps["dram"] == pytest.approx(1504 * 3.19668587896e9 / 1e12, rel=1e-6)
    # the GEMM of the same report runs at 1.66 GHz: its ceiling stays at its own clock
    gemm = next(c for c in user_cards.values() if c.group.startswith("linear_cast:nvjet"))
    assert gemm.kernels[0].roofline.clock_flags == []  # type: ignore[union-attr]


def test_exactly_the_kernels_above_the_maximum_are_flagged(rules: LoadedRules) -> None:
    """Every kernel of the --set full reports; the capture reports of fixtures/ stay under
    1.98 GHz (1.978 at most, dit_fp32_notf32)."""
    cards = classify([SET_FULL, USER_FULL.parent], rules, jobs=1).cards
    flagged = {
        (c.stage, k.function_name): k.roofline.clock_flags
        for c in cards
        for k in c.kernels
        if k.roofline and k.roofline.clock_flags
    }
    assert flagged == {
        ("linear_cast", "vectorized_elementwise_kernel"): _flags("2.03415", "44.416"),
        ("gemm8192_set_full", "reduce_kernel"): _flags("1.99266", "67.232"),
        ("h200_rerun_full", "unrolled_elementwise_kernel"): _flags("1.99298", "68.672"),
    }
    for card in cards:  # never above the peak per cycle x the device's maximum clock
        for kernel in card.kernels:
            roof, m = kernel.roofline, kernel.metrics
            if roof and roof.family and roof.compute_ceiling_tflops:
                key = "peak_ffma" if roof.family == "fp32" else f"peak_{roof.family}"
                factor = 2 if roof.family == "fp32" else 1
                assert roof.compute_ceiling_tflops <= m[key] * factor * 1.98e9 / 1e12 * 1.000001  # type: ignore[operator]


def test_mfu_names_its_clock_and_gives_the_datasheet_basis(roofline_cards: dict[str, Card]) -> None:
    """The 4680x5120x5120 bf16 GEMM: 93.0 % against 540,672 FLOP/cycle x 1.6141 GHz (the clock
    seen), 75.8 % against 540,672 x 1.98 GHz = 1,070.53 TFLOP/s (the device's maximum)."""
    roof = roofline_cards[GEMM].roofline
    assert roof is not None
    assert roof.peak_clock_ghz == 1.61409742527 and roof.max_clock_ghz == 1.98
    assert (roof.mfu_pct, roof.peak_tflops) == (92.9562, 872.697)
    assert roof.peak_max_clock_tflops == 1070.53
    nominal, seconds = 2 * 4680 * 5120 * 5120, roofline_cards[GEMM].summed_kernel_us * 1e-6  # type: ignore[operator]
    assert roof.mfu_max_clock_pct == pytest.approx(
        100 * nominal / seconds / 540672 / 1.98e9, rel=1e-5
    )
    assert roof.mfu_max_clock_pct == 75.778
    row = cards_frame_row(roofline_cards)
    assert (row["mfu_pct"], row["mfu_clock_ghz"], row["mfu_max_clock_pct"]) == (
        92.9562,
        1.61409742527,
        75.778,
    )


def _file(card: Card) -> CardFile:
    """A cards file holding `card` alone."""
    empty = dict.fromkeys(("tool_version", "rules_id", "rules_file", "rules_sha256"))
    return CardFile(
        generated_at="", rules="", inputs=[], cards=[card], summary={}, by_stage={}, **empty
    )


def cards_frame_row(cards: dict[str, Card]) -> dict[str, object]:
    """The summary table row of the GEMM card."""
    return cards_frame(_file(cards[GEMM])).iloc[0].to_dict()  # type: ignore[no-any-return]


def test_reclassify_keeps_the_cap_and_a_card_without_device_figures_is_not_capped(
    user_cards: dict[str, Card], rules: LoadedRules
) -> None:
    card = user_cards[CAST]
    again = judge(card, rules).kernels[0].roofline
    assert again is not None and again.clock_flags == _flags("2.03415", "44.416")
    assert again.compute_ceiling_tflops == 66.9082
    bare = judge(card.model_copy(update={"gpu": GpuInfo()}), rules).kernels[0].roofline
    assert (
        bare is not None and bare.clock_flags == [] and bare.ceiling_sm_clock_ghz == 2.03414617173
    )


@pytest.mark.parametrize("value", [True, "1980000", -5, 0, None, [1980000]])
def test_odd_device_figures_cap_nothing(value: object, user_cards: dict[str, Card]) -> None:
    """A cards file is user input: a maximum that is not a positive number is ignored."""
    device = GpuInfo.model_validate({"sm_clock_max_khz": value})
    assert device_max_ghz(device, "sm_clock_ghz") is None
    metrics = user_cards[CAST].kernels[0].metrics
    roof = kernel_roofline(metrics, device)
    assert roof.clock_flags == [] and roof.ceiling_sm_clock_ghz == 2.03414617173


def test_the_html_report_says_the_basis(roofline_cards: dict[str, Card]) -> None:
    html = page_html([("cards.json", _file(roofline_cards[GEMM]))], "t")
    assert 'title="at 1.614 GHz; 75.8 % at the device\'s maximum 1.98 GHz"' in html


@pytest.fixture(scope="module")
def roofline_cards(rules: LoadedRules) -> dict[str, Card]:
    return {
        c.group: c for c in classify([ROOT / "fixtures" / "roofline_h200"], rules, jobs=1).cards
    }
