"""Pure logic of diff: pairing cards (synthetic cards), kernel identity across damaged legacy
names (names taken from the legacy file and our H200 capture), threshold crossings."""

from __future__ import annotations

from typing import Any

import pytest

from ncu_classify.cards.model import Card
from ncu_classify.compare.crossings import crossings
from ncu_classify.compare.matching import pair_cards, same_kernel
from ncu_classify.core.noise import Noise
from ncu_classify.verdicts.rules import load_rules


def card(group: str, stage: str = "dit", op: str = "aten.linear.default", **params: Any) -> Card:
    return Card(
        group=group,
        stage=stage,
        op=op,
        shape_parameters=params,
        summed_kernel_us=1.0,
        kernels=[],
        dominant_kernel=None,
        primary=None,
        primary_rule=None,
        alternative_explanation=None,
        counter_experiment=None,
        status="no_kernels",
    )


def test_group_then_shape_then_position() -> None:
    base = [
        card("a", M=1, N=2, K=3),
        card("legacy:{M:4}", M=4, N=5, K=6),
        card("cast0", stage="output", op="aten.to.dtype"),
        card("only-in-base", M=9, N=9, K=9),
    ]
    cand = [
        card("ours:M4:bf16", M=4, N=5, K=6, dtype="bf16", bias=True),
        card("a", M=1, N=2, K=3),
        card("ours:cast", stage="output", op="aten.to.dtype", shape=[1, 3], to="uint8"),
        card("only-in-cand", M=7, N=7, K=7),
    ]
    pairs = pair_cards(base, cand)
    got = [
        (p.baseline.group if p.baseline else None, p.candidate.group if p.candidate else None,
         p.matched_by)
        for p in pairs
    ]  # fmt: skip
    assert got == [
        ("a", "a", "group"),
        ("legacy:{M:4}", "ours:M4:bf16", "shape"),
        ("cast0", "ours:cast", "position"),
        ("only-in-base", None, None),
        (None, "only-in-cand", None),
    ]


def test_settings_prefer_the_twin_that_agrees_on_most() -> None:
    base = [card("x", M=4, N=5, K=6, dtype="fp32", allow_tf32=True)]
    cand = [
        card("y1", M=4, N=5, K=6, dtype="fp32", allow_tf32=False),
        card("y2", M=4, N=5, K=6, dtype="fp32", allow_tf32=True),
    ]
    pairs = pair_cards(base, cand)
    assert [(p.candidate.group, p.matched_by) for p in pairs if p.candidate] == [
        ("y2", "shape"),
        ("y1", None),
    ]


def test_a_second_copy_is_a_repeat_and_other_shapes_do_not_pair() -> None:
    base = [card("d", M=1, N=2, K=3), card("d", M=1, N=2, K=3)]
    cand = [card("d", M=1, N=2, K=3), card("e", M=1, N=2, K=4)]
    pairs = pair_cards(base, cand)
    assert [(p.matched_by, p.repeat) for p in pairs] == [
        ("group", False),
        (None, True),
        (None, False),
    ]


@pytest.mark.parametrize(
    ("legacy", "ours", "same"),
    [
        (  # the legacy pipeline dropped the template arguments
            "void cutlass::Kernel2(Params)",
            "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>"
            "(T1::Params)",
            True,
        ),
        (  # ... or ate the middle of the name, namespaces too
            "void device_kernel, cute::C<1>",
            "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<",
            True,
        ),
        (  # ... or cut it short
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
            "warpgroupsize1x1x1_g1_execute_segment_",
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
            "warpgroupsize1x1x1_g1_execute_segment_k_on_kernel__5x_cudnn",
            True,
        ),
        (  # another cuBLAS algorithm is another kernel
            "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT",
            "nvjet_sm90_tst_192x144_64x4_2x1_v_bz_coopA_bias_TNT",
            False,
        ),
        ("void a::k<1>(int)", "void a::k<2>(int)", False),
        ("short_name", "short_name_longer", False),  # a prefix this short is not a truncation
    ],
)
def test_same_kernel(legacy: str, ours: str, same: bool) -> None:
    assert same_kernel(legacy, ours) is same
    assert same_kernel(ours, legacy) is same


NOISE = Noise(id="t", duration_pct=5.0, metrics={"l2_pct": 2.0}, default=1.0)


def test_crossings_of_the_first_rule_that_differs() -> None:
    rules = load_rules().rules
    base = {"sm_pct": 50.0, "tensor_pct": 40.0, "dram_pct": 20.0, "l2_pct": 59.0, "waves": 3.0}
    cand = {**base, "l2_pct": 61.0}
    [crossed] = crossings(rules, base, cand, NOISE)
    assert (crossed.rule, crossed.metric, crossed.threshold, crossed.within_noise) == (
        "l2_bandwidth_bound",
        "l2_pct",
        60.0,
        True,
    )
    far = crossings(rules, base, {**base, "l2_pct": 61.5}, NOISE)
    assert [c.within_noise for c in far] == [False]  # 2.5 points > the 2.0 tolerance


def test_a_missing_value_is_an_unknown_crossing_not_noise() -> None:
    rules = load_rules().rules
    base = {"sm_pct": 70.0, "tensor_pct": 65.0, "dram_pct": 20.0, "l2_pct": 30.0}
    cand = {"sm_pct": 50.0, "tensor_pct": None, "dram_pct": 20.0, "l2_pct": 30.0}
    crossed = crossings(rules, base, cand, NOISE)
    assert [(c.metric, c.baseline, c.candidate, c.within_noise) for c in crossed] == [
        ("sm_pct", 70.0, 50.0, False),
        ("tensor_pct", 65.0, None, None),  # settled by its bound, sm_pct < 60; never "noise"
    ]
    both_missing = crossings(rules, {**base, "tensor_pct": None}, cand, NOISE)
    assert [c.metric for c in both_missing] == ["sm_pct"]
    assert crossings(rules, base, base, NOISE) == []
