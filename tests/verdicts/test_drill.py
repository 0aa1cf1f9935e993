"""Drill-downs on the H200 captures (fixtures/drill_h200_*): every share recomputed from the raw
report, the settle rules on the real mixes, the merge into the first capture's cards, and the
issue's bar: after drill-down at most 5 % of each stage's kernel time is unresolved."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, raw_actions

from ncu_classify.cards.model import UNRESOLVED, Card, CardFile
from ncu_classify.cards.rollup import card_class, dominant, named_dominant
from ncu_classify.core.stalls import CPI_METRIC, STALL_REASONS, stall_metric
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.drill import TOP_SHARE, drill_values, settle_rules
from ncu_classify.verdicts.judge import OWN_COUNTERS
from ncu_classify.verdicts.rules import LoadedRules, evaluate, load_rules

ROOFLINE = ROOT / "rules" / "roofline.yaml"
PAIRS = {  # drill-down -> the capture it drills
    "drill_h200_480x832": "workload_h200_480x832",
    "drill_h200_704x1280": "workload_h200_704x1280",
    "drill_h200_wan14b": "record_h200_wan14b",
}


@functools.cache
def cards_of(*folders: str) -> CardFile:
    """Cards of fixtures folders under rules/roofline.yaml (cached: read once per session)."""
    return classify([ROOT / "fixtures" / f for f in folders], load_rules(ROOFLINE), jobs=2)


def raw_stalls(report: Path) -> dict[str, list[float]]:
    """Per NVTX range, the raw CPI then every stall reason of each kernel, straight from
    ncu_report (the reader is not used)."""
    out: dict[str, list[float]] = {}
    names = [CPI_METRIC, *map(stall_metric, STALL_REASONS)]
    for group, action in raw_actions(report):
        out.setdefault(group, []).extend(action.metric_by_name(n).as_double() for n in names)
    return out


@pytest.mark.parametrize("drill", sorted(PAIRS))
def test_every_share_is_recomputed_from_the_raw_report(drill: str) -> None:
    raw = raw_stalls(ROOT / "fixtures" / drill / "all.ncu-rep.xz")
    kernels = 0
    for card in cards_of(drill).cards:
        seen = raw[card.group]
        for index, kernel in enumerate(card.kernels):
            numbers = seen[index * 20 : index * 20 + 20]
            cpi, stalls = numbers[0], dict(zip(STALL_REASONS, numbers[1:], strict=True))
            total = sum(stalls.values())
            down = kernel.drill_down
            assert down is not None and down.cpi == float(f"{cpi:.6g}")
            assert {s.reason: s.share_pct for s in down.stalls} == {
                r: round(v / total * 100, 2) for r, v in stalls.items()
            }
            assert {s.reason: s.cycles_per_issue for s in down.stalls} == {
                r: float(f"{v:.6g}") for r, v in stalls.items()
            }
            order = sorted(stalls, key=lambda r: (-float(f"{stalls[r]:.6g}"), r))
            held = [sum(stalls[r] for r in order[:n]) / total * 100 for n in range(len(order))]
            assert (
                down.top_reasons == order[: next(n for n, h in enumerate(held) if h >= TOP_SHARE)]
            )
            assert abs(cpi - total) / cpi < 0.08  # the reasons add up to the CPI (separate passes)
            assert down.source.replay_passes == 19
            kernels += 1
    assert kernels == {"drill_h200_480x832": 33, "drill_h200_704x1280": 30}.get(drill, 110)


def _dominant(cards: CardFile, group: str) -> Card:
    return next(c for c in cards.cards if c.group == group)


@pytest.mark.parametrize(
    ("drill", "group", "settled", "top"),
    [
        # memory latency: the K=144 GEMM cannot fill its pipeline with three k-tiles
        ("drill_h200_480x832", "dit:linear:M4680_N5120_K144:bf16:bias", "memory_latency",
         [("long_scoreboard", 5.59299, 43.41), ("barrier", 1.37113, 10.64)]),
        # dependency latency: FlashAttention-2's mma.sync + softmax chain at 11 % warps active
        ("drill_h200_480x832", "attention:flash_attn_v2:self_b1_h10_d128_q4680_k28080of29640:bf16",
         "dependency_latency", None),
        # shared memory / MIO: an sm80 cutlass 1x1x1 conv
        ("drill_h200_480x832", "vae:conv3d:in1x192x2x120x52_w384x192x1x1x1_s1x1x1_p0x0x0:fp32:tf32",
         "shared_memory_mio", [("mio_throttle", 1.20571, 19.84), ("selected", 0.999988, 16.45)]),
        # synchronisation: cuDNN SDPA cross-attention, k = 512 (borderline: 30.84 % vs 30)
        ("drill_h200_wan14b", "dit:sdpa:cross_b1_h40_d128_q4680_k512:bf16", "synchronisation",
         [("barrier", 1.75065, 30.84), ("selected", 1.00009, 17.62)]),
        # issue contention: cat of small broadcast pieces
        ("drill_h200_wan14b", "dit:aten.cat.default:3x30x52x44:bf16:broadcast", "issue_contention",
         [("not_selected", 6.07913, 31.7), ("wait", 3.0005, 15.65)]),
    ],
)  # fmt: skip
def test_settled_classes_of_real_mixes(
    drill: str, group: str, settled: str, top: list[tuple[str, float, float]] | None
) -> None:
    card = _dominant(cards_of(drill), group)
    top_kernel = named_dominant(card)
    down = top_kernel.drill_down  # type: ignore[union-attr]
    assert down is not None and down.settled == settled
    if top is not None:
        assert [(s.reason, s.cycles_per_issue, s.share_pct) for s in down.stalls[:2]] == top
    assert bool(down.margin and down.margin.borderline) == (settled == "synchronisation")
    unsettled = card.status == "unresolved" or top_kernel.margin.borderline  # type: ignore[union-attr]
    assert (card.settled is not None and card.settled.primary == settled) == unsettled


def test_the_vectorised_pad_waits_on_its_store_queue() -> None:
    card = _dominant(
        cards_of("drill_h200_wan14b"), "vae:aten.constant_pad_nd.default:1x96x6x480x832:fp32"
    )
    pad = next(k for k in card.kernels if k.function_name == "vectorized_elementwise_kernel")
    assert pad.drill_down is not None and pad.drill_down.settled == "memory_queue"
    # drain + lg_throttle 44.03 %: its stores back up. The MIO group is larger (51.96 %), free
    # of bank conflicts; the memory queue is the resource the rules name first
    down = pad.drill_down
    assert (down.groups["memory_queue"], down.groups["shared_mio"]) == (44.03, 51.96)
    assert down.deciders["bank_conflicts"] == 0 and down.deciders["shared_wavefronts"] == 904480


def test_settle_rules_put_a_resource_before_the_dependency_group() -> None:
    rules = settle_rules().rules
    mix = {"long_scoreboard": 3.1, "wait": 3.0, "selected": 1.0, "barrier": 2.9}
    values = drill_values(mix, {})
    assert round(values["stall_memory_latency_pct"] or 0, 2) == 31.0
    assert evaluate(rules, values).rule.name == "memory_latency"
    no_cycles = drill_values({"cpi": 0.0}, {})
    assert evaluate(rules, no_cycles).rule.name == "unresolved_mixed_stalls"


@pytest.mark.parametrize("drill", sorted(PAIRS))
def test_merged_cards_keep_the_first_verdict_and_metrics(drill: str) -> None:
    first, merged = cards_of(PAIRS[drill]), cards_of(PAIRS[drill], drill)
    selected = json.loads((ROOT / "fixtures" / drill / "manifest.json").read_text())
    chosen = selected["drill_down"]["selected"]
    assert [c.group for c in merged.cards] == [c.group for c in first.cards]
    assert merged.input_warnings == first.input_warnings
    for before, after in zip(first.cards, merged.cards, strict=True):
        assert after.primary == before.primary and after.status == before.status
        assert [k.metrics for k in after.kernels] == [k.metrics for k in before.kernels]
        drilled = [k.drill_down for k in after.kernels]
        if after.group not in chosen:
            assert drilled == [None] * len(drilled) and after.settled is None
            continue
        label = f"drill-down capture {Path(drill).name} ("  # named as from any folder
        assert all(d is not None and d.source.experiment.startswith(label) for d in drilled)
        # settled where the first verdict is unresolved or borderline; a card chosen as
        # borderline by a distance on a launch figure (before those stopped counting) is firm
        top = dominant(after.kernels)  # by time: two launches of one kernel share a name
        unsettled = after.status == "unresolved" or top.margin.borderline  # type: ignore[union-attr]
        assert (after.settled is not None) == unsettled
        if after.settled is not None:
            assert after.settled.settled_by == drilled[0].source.experiment  # type: ignore[union-attr]


@pytest.mark.parametrize("drill", sorted(PAIRS))
def test_after_drill_down_at_most_5_pct_of_a_stage_is_unresolved(drill: str) -> None:
    first, merged = cards_of(PAIRS[drill]), cards_of(PAIRS[drill], drill)
    for card in first.cards:  # every formerly unresolved card: drilled and settled
        if card.status == "unresolved":
            after = _dominant(merged, card.group)
            assert after.settled is not None and after.settled.primary != "unresolved_mixed_stalls"
    time: dict[str, float] = {}
    unresolved: dict[str, float] = {}
    for card in merged.cards:
        us = (card.summed_kernel_us or 0.0) * card.calls
        time[card.stage] = time.get(card.stage, 0.0) + us
        if card_class(card)[1] in (UNRESOLVED, "unresolved_mixed_stalls"):
            unresolved[card.stage] = unresolved.get(card.stage, 0.0) + us
    assert all(unresolved.get(stage, 0.0) <= 0.05 * total for stage, total in time.items())


def test_a_drill_down_of_another_backend_is_not_merged(tmp_path: Path) -> None:
    """FA3 missing where the drill-down ran: SDPA fell back to cuDNN, another kernel."""
    copy = tmp_path / "drill"
    shutil.copytree(ROOT / "fixtures" / "drill_h200_704x1280", copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    fa3 = "attention:flash_attn_v3:cross_b1_h10_d128_q10560_k512:bf16"
    [shape] = [s for s in manifest["shapes"] if s["group"] == fa3]
    assert shape["backend_used"] == "fa3_fwd"
    shape["backend_used"] = "sdpa_cudnn"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    merged = classify(
        [ROOT / "fixtures" / "workload_h200_704x1280", copy], load_rules(ROOFLINE), jobs=2
    )
    card = _dominant(merged, fa3)
    assert card.settled is None and all(k.drill_down is None for k in card.kernels)
    assert merged.input_warnings == [
        f"{fa3}: the drill-down replayed backend sdpa_cudnn, the card fa3_fwd: not merged"
    ]


def test_a_set_full_report_is_drilled_without_a_capture() -> None:
    cards = classify([ROOT / "fixtures" / "user_set_full"], load_rules(), jobs=1)
    drilled = [k for c in cards.cards for k in c.kernels if k.drill_down]
    assert len(drilled) == sum(len(c.kernels) for c in cards.cards) == 4
    assert all(k.drill_down.source.experiment == OWN_COUNTERS for k in drilled)  # type: ignore[union-attr]
    assert {k.drill_down.source.replay_passes for k in drilled} == {38}  # type: ignore[union-attr]
    [open_] = [c for c in cards.cards if c.status == "unresolved"]
    assert open_.settled is not None and open_.settled.primary == "memory_latency"


def test_a_second_drill_down_of_the_same_shapes_is_said_and_not_merged(tmp_path: Path) -> None:
    copy = tmp_path / "again"
    shutil.copytree(ROOT / "fixtures" / "drill_h200_480x832", copy)
    folders = [ROOT / "fixtures" / f for f in ("workload_h200_480x832", "drill_h200_480x832")]
    merged = classify([*folders, copy], load_rules(ROOFLINE), jobs=2)
    once = cards_of("workload_h200_480x832", "drill_h200_480x832")
    assert [c.model_dump() for c in merged.cards] == [c.model_dump() for c in once.cards]
    [warning] = merged.input_warnings
    assert warning.startswith("drill-down capture again (") and warning.endswith(
        "12 shapes drilled down already by an earlier input (first:"
        " dit:linear:M4680_N5120_K144:bf16:bias); the earlier drill-down is merged"
    )


def test_one_shape_drilled_twice_is_counted_in_the_singular(rules: LoadedRules) -> None:
    """The 480x832 drill-down shares one shape with the Wan 14B one given before it: '1 shape
    drilled down already', not '1 shapes' (issue 37, core.text.counted)."""
    fixtures = ROOT / "fixtures"
    cards = classify(
        [fixtures / f for f in ("record_h200_wan14b", "drill_h200_wan14b", "drill_h200_480x832")],
        rules,
        jobs=2,
    )
    [line] = [w for w in cards.input_warnings if "drilled down already" in w]
    assert line.startswith(
        "drill-down capture drill_h200_480x832 (2026-12-02T07:20:31+00:00): 1 shape drilled"
        " down already by an earlier input (first: output:cast:1x3x9x480x832:fp32-uint8);"
    )
