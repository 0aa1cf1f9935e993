"""Persistent grids (grid = SMs x blocks per SM, waves exactly 1.00: cuBLAS nvjet, cuDNN xmma
and SDPA on the H200) are never read as a tail, their idle SMs get a finding with the tile count
where the shape gives it, and no verdict is borderline by a distance on a launch figure."""

from __future__ import annotations

import functools

import pytest
from helpers import ROOT

from ncu_classify.cards.model import CardFile
from ncu_classify.core.metrics import EXACT_METRICS
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.judge import kernel_values
from ncu_classify.verdicts.margins import verdict_margin
from ncu_classify.verdicts.rules import load_rules
from ncu_classify.verdicts.tiles import conv_gemm, tile_note

CAPTURES = [
    "workload_h200_480x832",
    "workload_h200_704x1280",
    "record_h200_wan14b",
    "roofline_h200",
]
TAILS = {"tail_after_full_waves", "partial_wave_tail"}


@functools.cache
def cards(folder: str, rules: str) -> CardFile:
    path = None if rules == "default" else ROOT / "rules" / f"{rules}.yaml"
    return classify([ROOT / "fixtures" / folder], load_rules(path), jobs=2)


@pytest.mark.parametrize("rules", ["default", "roofline"])
@pytest.mark.parametrize("folder", CAPTURES)
def test_no_persistent_kernel_is_a_tail_nor_borderline_on_a_launch_figure(
    folder: str, rules: str
) -> None:
    persistent = 0
    for card in cards(folder, rules).cards:
        for kernel in card.kernels:
            if kernel.metrics.get("waves") == 1.0:
                persistent += 1
                assert kernel.classification not in TAILS, (card.group, kernel.kernel)
            margin = kernel.margin
            if margin is None or not margin.borderline:
                continue
            near = [(margin.metric, margin.distance),
                    (margin.alternative_metric, margin.alternative_distance)]  # fmt: skip
            assert any(m is not None and m not in EXACT_METRICS and d is not None for m, d in near)
    assert persistent >= 7  # every capture holds persistent nvjet / xmma / SDPA kernels


def test_a_persistent_gemm_is_no_longer_borderline_to_grid_under_one_wave() -> None:
    rules = load_rules(ROOT / "rules" / "roofline.yaml").rules
    values = kernel_values(
        {"waves": 1.0, "sm_cycles_active": 95.0, "cycles_elapsed": 100.0, "sm_pct": 30.0,
         "tensor_pct": 20.0, "dram_pct": 20.0, "l2_pct": 30.0, "warps_active_pct": 15.0,
         "issue_pct": 20.0, "fma_pipe_pct": 1.0, "l1_pipe_pct": 10.0},
        {},
    )  # fmt: skip
    margin = verdict_margin(rules, "latency_or_occupancy_limited", values)
    assert margin.borderline is False
    margin = verdict_margin(
        rules, "unresolved_no_dominant_limiter", {**values, "warps_active_pct": 40.0}
    )
    assert (margin.alternative, margin.alternative_distance, margin.borderline) != (
        "grid_under_one_wave",
        0.0,
        True,
    )


def test_idle_sms_of_a_persistent_conv_are_counted_in_tiles() -> None:
    [card] = [
        c for c in cards("workload_h200_480x832", "roofline").cards
        if c.group == "vae:conv3d:in1x384x3x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32"
    ]  # fmt: skip
    gemm = next(k for k in card.kernels if k.kernel == card.dominant_kernel)
    assert gemm.classification == "idle_sms_in_persistent_grid"
    assert gemm.metrics["grid"] == 132 and gemm.metrics["waves"] == 1.0
    assert gemm.verdict_note == (
        "persistent grid, SMs active 82%: 147 output tiles of 128x128 (GEMM 6240 x 384) over"
        " 132 CTAs: 1.11 per CTA; the last of 2 rounds keeps 15 of 132 CTAs busy"
    )
    # by hand: output 1 x 384 x 1 x 120 x 52 -> M = 6240 pixels, N = 384 channels
    assert conv_gemm(card.shape_parameters) == (6240, 384)
    assert -(-6240 // 128) * -(-384 // 128) == 147


def test_tile_note_says_nothing_it_cannot_derive() -> None:
    name = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize256x128x64_g1"
    assert (
        tile_note("nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT", {"output": [1, 2, 3]}, 132)
        is None
    )
    assert tile_note(name, {}, 132) is None
    assert tile_note(name, {"output": [1, 384, "x", 4]}, 132) is None
    assert tile_note(name, {"output": [1, 384, 1, 4, 4]}, 132) == (
        "3 output tiles of 256x128 (GEMM 16 x 384) over 132 CTAs: 0.02 per CTA; 129 CTAs have"
        " no tile"
    )
    assert tile_note(name, {"output": [1, 128, 1, 256, 132]}, 132).endswith(  # type: ignore[union-attr]
        "every round full: the idle time is uneven tile cost"
    )
