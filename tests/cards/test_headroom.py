"""Headroom recomputed from the raw H200 reports: a kernel's time at its binding roof is the
longest of its work over each resource's peak (FLOPs over the peak of the family it used, bytes
over each level's bandwidth, at the clocks measured, capped at the device's maxima), the op's
speed of light the longer of its nominal FLOPs at its dtype's dense peak and its compulsory
bytes at DRAM bandwidth. Three of these cards are worked by hand in docs/reading-a-card.md."""

from __future__ import annotations

import functools
import statistics
from pathlib import Path

import pytest
from helpers import ROOT, raw_actions

from ncu_classify.cards.headroom import card_headroom, stage_totals
from ncu_classify.cards.model import Card
from ncu_classify.core.counters import FP32_OPS, MEMORY_LEVELS, TENSOR_FAMILIES
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

MAX_SM_GHZ = 1.98  # device__attribute_max_gpu_frequency_khz of the H200


@functools.cache
def card(folder: str, group: str) -> Card:
    cards = classify([ROOT / "fixtures" / folder], load_rules(), jobs=2)
    return next(c for c in cards.cards if c.group == group)


def _value(action: object, name: str) -> float:
    return action.metric_by_name(name).as_double()  # type: ignore[attr-defined,no-any-return]


def raw_roof_us(report: Path, group: str) -> list[tuple[float, float]]:
    """(measured us, us at its roof) of each kernel of a range, from ncu_report alone."""
    out = []
    for innermost, act in raw_actions(report):
        if innermost == group:
            v = functools.partial(_value, act)

            mem_khz = v("device__attribute_memory_clock_rate")
            clocks = {
                "sm": min(v("sm__cycles_elapsed.avg.per_second"), MAX_SM_GHZ * 1e9),
                "dram": min(v("dram__cycles_elapsed.avg.per_second"), mem_khz * 1e3),
                "l2": v("lts__cycles_elapsed.avg.per_second"),
                "l1": min(v("l1tex__cycles_elapsed.avg.per_second"), MAX_SM_GHZ * 1e9),
            }
            flops = {
                f"{fam}_{kind}": v(f"{name}.sum") for (fam, kind), name in TENSOR_FAMILIES.items()
            }
            ffma = FP32_OPS["ffma"]
            flops["fp32"] = (
                2 * v(f"{ffma}.sum") + v(f"{FP32_OPS['fadd']}.sum") + v(f"{FP32_OPS['fmul']}.sum")
            )
            times = []
            family = max(flops, key=lambda f: flops[f])
            if flops[family] > 0:
                peak = (
                    2 * v(f"{ffma}.sum.peak_sustained")
                    if family == "fp32"
                    else v(f"{TENSOR_FAMILIES[tuple(family.split('_'))]}.sum.peak_sustained")
                )  # type: ignore[index]
                times.append(sum(flops.values()) / (peak * clocks["sm"]))
            for level, (name, _) in MEMORY_LEVELS.items():
                times.append(v(f"{name}.sum") / (v(f"{name}.sum.peak_sustained") * clocks[level]))
            out.append((v("gpu__time_duration.sum") / 1e3, max(times) * 1e6))
    return out


@pytest.mark.parametrize(
    ("folder", "group", "kernel_roof_us", "sol_us", "bound"),
    [
        # a GEMM near its roof: 94.4 % of the wgmma bf16 ceiling
        ("roofline_h200", "dit:linear:M4680_N5120_K5120:bf16:bias", 285.512, 281.159, "compute"),
        # an L2-bound conv: cuDNN's sm80 kernel for 96 channels, bf16 channels_last_3d
        ("diff_h200/vae_bf16_cl3d",
         "vae:conv3d:in1x96x6x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:bf16:cl3d", 432.872, 212.564,
         "compute"),
        # attention: cuDNN's wgmma SDPA (63.8 % of its compute roof) and FlashAttention-2's
        # mma.sync kernel, whose roof is the hmma ceiling, 2/3 of the wgmma SOL's peak
        ("roofline_h200", "attention:sdpa_cudnn:self_b1_h40_d128_q4680_k4680of29640:bf16",
         488.461, 473.14, "compute"),
        ("roofline_h200", "attention:sdpa_flash:self_b1_h40_d128_q4680_k4680of29640:bf16",
         718.871, 463.205, "compute"),
        # an elementwise op: the fp32 -> uint8 output cast, DRAM at 35 % of its bandwidth
        ("workload_h200_480x832", "output:cast:1x3x12x480x832:fp32-uint8", 13.651, 14.955, "dram"),
    ],
)  # fmt: skip
def test_five_cards_recomputed_from_the_raw_report(
    folder: str, group: str, kernel_roof_us: float, sol_us: float, bound: str
) -> None:
    c = card(folder, group)
    room = card_headroom(c)
    assert room is not None
    # the report its kernels are in (cards name it below the input: `roofline_h200/all...`)
    raw = raw_roof_us(ROOT / "fixtures" / Path(folder).parent / (c.ncu_output or ""), group)
    assert [k.measured_us for k in room.kernels] == pytest.approx([m for m, _ in raw], rel=1e-9)
    # the card rounds pct_of_roof to 6 digits and the time to the nanosecond
    assert [k.roof_us for k in room.kernels] == pytest.approx(
        [t for _, t in raw], rel=2e-5, abs=5e-4
    )
    roofs = round(sum(k.roof_us for k in room.kernels), 3)
    assert (roofs, room.sol_us, room.sol_bound) == (kernel_roof_us, sol_us, bound)
    # kernel roofs below the op's SOL (the cast's output partly still in L2) count at the SOL
    assert room.kernel_roof_us == max(roofs, sol_us)
    assert room.below_sol_us == round(max(sol_us - roofs, 0.0), 3)
    assert room.kernel_headroom_us == round(room.measured_us - room.kernel_roof_us, 3) >= 0
    # the speed of light from the card's nominal work and the report's own peaks
    dram = statistics.median(k.roofline.bandwidth_tbps["dram"] for k in c.kernels)  # type: ignore[union-attr,type-var]
    bounds = {"dram": c.nominal_bytes / (dram * 1e12) * 1e6}  # type: ignore[operator]
    if c.nominal_mac_flops:
        bounds["compute"] = c.nominal_mac_flops / (c.roofline.peak_tflops * 1e12) * 1e6  # type: ignore[union-attr,operator]
    assert room.sol_us == round(max(bounds.values()), 3)
    assert room.sol_headroom_us == round(max(room.measured_us - max(bounds.values()), 0.0), 3)


def test_the_vae_bf16_decode_at_its_kernel_roofs_and_speed_of_light() -> None:
    """The issue's figure: kernels at their own roofs would take 1,474 us instead of 2,242."""
    from ncu_classify.cards.files import load_card_file

    cards = load_card_file(ROOT / "reports" / "diff" / "cards" / "vae_bf16_cl3d.json")
    vae = stage_totals([c for c in cards.cards if c.stage == "vae"])["vae"]
    assert (vae.measured_us, vae.kernel_roof_us) == (2241.856, 1475.514)
    assert (vae.recoverable_at_kernel_roof_us, vae.recoverable_at_sol_us) == (766.342, 1380.022)
    # 1,473.875 us at the kernels' own roofs, 1.639 us of it under three convs' SOL
    assert (vae.cards_below_sol, vae.below_sol_us) == (3, 1.639)
    assert vae.cards_without_sol == 0


def test_a_kernel_above_its_roof_is_flagged_not_silently_clamped() -> None:
    c = card("roofline_h200", "dit:linear:M4680_N5120_K5120:bf16:bias")
    [gemm] = c.kernels
    roof = gemm.roofline.model_copy(update={"pct_of_roof": 104.2})  # type: ignore[union-attr]
    odd = c.model_copy(update={"kernels": [gemm.model_copy(update={"roofline": roof})]})
    room = card_headroom(odd)
    assert room is not None and room.kernels[0].headroom_us == 0.0
    assert room.flags == [
        f"{gemm.kernel}: measured at 104.2 % of its compute roof: a clock or counter error;"
        " capped at its measured time (0 headroom)"
    ]


def test_a_negative_figure_in_a_card_from_elsewhere_is_unknown_not_a_bound() -> None:
    """FlashAttention-2's card of the 480x832 workload, edited as a cards file from elsewhere
    may be: a negative peak, nominal FLOPs or DRAM bandwidth leaves its SOL unknown, said why,
    never the other bound alone (issue 37: a peak of -946 TFLOP/s gave the bytes' SOL)."""
    from ncu_classify.cards.files import load_card_file

    cards = load_card_file(ROOT / "reports" / "diff" / "cards" / "w480_gpu0.json")
    [fa2] = [c for c in cards.cards if c.group.endswith("k28080of29640:bf16") and "v2" in c.group]
    good = card_headroom(fa2)
    assert good is not None and good.sol_bound == "compute" and good.sol_unknown is None
    assert fa2.roofline is not None
    negative_peak = fa2.model_copy(
        update={"roofline": fa2.roofline.model_copy(update={"peak_tflops": -946.0})}
    )
    negative_flops = fa2.model_copy(update={"nominal_mac_flops": -(fa2.nominal_mac_flops or 0)})
    kernels = [
        k.model_copy(
            update={"roofline": k.roofline.model_copy(update={"bandwidth_tbps": {"dram": -4.8}})}
        )
        for k in fa2.kernels
        if k.roofline is not None
    ]
    negative_dram = fa2.model_copy(update={"kernels": kernels, "nominal_mac_flops": None})
    whys = []
    for odd in (negative_peak, negative_flops, negative_dram):
        room = card_headroom(odd)
        assert room is not None and (room.sol_us, room.sol_bound, room.at_sol_us) == (None,) * 3
        whys.append(room.sol_unknown)
    assert whys == [
        "the compute peak of its dtype is unknown",
        f"its nominal FLOPs are negative ({-(fa2.nominal_mac_flops or 0):,}): unknown",
        "no DRAM bandwidth measured",
    ]
