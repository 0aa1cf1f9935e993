"""The cards of a real light capture: the Wan 14B recording captured on one H100 by
`capture --coverage 99.5 --light-after 80` and `--light-after 90`, and whole, in one device
command (reports/coverage/device_light.sh, 2026-12-05), classified there and judged again
here under the current rules. What the light tier measured, how the coverage lines count it,
what summary and the DataFrames say of it, and its verdicts against the whole capture's."""

from __future__ import annotations

import collections
import lzma
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cards.figures import Margin
from ncu_classify.cards.model import CardFile
from ncu_classify.cards.rollup import named_dominant
from ncu_classify.present.frames import cards_frame
from ncu_classify.present.summary import light_lines
from ncu_classify.verdicts.judge import reclassify
from ncu_classify.verdicts.rules import LoadedRules

CARDS = ROOT / "reports" / "coverage" / "cards_wan14b_{}_h100.json.xz"
TWO_COPIES = "vae:aten.cat.default:1x384x1x120x208:fp32"  # two copy kernels of one name


def _judged(name: str, rules: LoadedRules) -> CardFile:
    """A committed cards file of the H100 run, judged under the current rules."""
    packed = Path(str(CARDS).format(name)).read_bytes()
    cards = CardFile.model_validate_json(lzma.decompress(packed))
    return reclassify(cards, rules, at="2026-12-05T00:00:00Z")


@pytest.fixture(scope="module")
def light80(rules: LoadedRules) -> CardFile:
    return _judged("light80", rules)


@pytest.fixture(scope="module")
def whole(rules: LoadedRules) -> CardFile:
    return _judged("whole", rules)


def test_the_light_list_took_one_pass_on_every_real_kernel(light80: CardFile) -> None:
    """ncu replayed each light kernel once and each full kernel 12 times (the card's
    replay_passes, read from the reports)."""
    passes = collections.Counter(
        (bool(card.captured_light), kernel.replay_passes)
        for card in light80.cards
        for kernel in card.kernels
    )
    assert passes == {(True, 1): 201, (False, 12): 86}


def test_every_stage_is_covered_to_the_target(light80: CardFile) -> None:
    """Light cards count as covered: every stage at or above the 99.5 % asked."""
    assert {c.stage: c.coverage_pct for c in light80.coverage} == {
        "dit": 99.57,
        "output": 100.0,
        "vae": 99.52,
    }


def test_summary_counts_the_light_cards_and_their_time(light80: CardFile) -> None:
    assert light_lines(light80)[0].startswith(
        "captured light: 129 cards without sm_pct and l2_pct; 27 unresolved (15,349.9 us per"
        " inference), 87 classed past a rule they could not check (82,810.0 us per inference);"
    )


def test_of_two_kernels_of_one_name_the_longer_is_the_dominant(light80: CardFile) -> None:
    """A cat launches one copy kernel per input, both named alike; the card's dominant kernel
    is the longer (60.7 us, whose DRAM verdict passed over compute_bound unchecked), in the
    DataFrame too, not the first of that name (30.7 us, rival checked)."""
    card = next(c for c in light80.cards if c.group == TWO_COPIES)
    first, second = card.kernels
    assert first.kernel == second.kernel == card.dominant_kernel
    top = named_dominant(card)
    assert top is second
    assert top.metrics["dur_us"] == 60.736
    assert top.margin is not None and top.margin.rival_unchecked
    row = cards_frame(light80).set_index("group").loc[TWO_COPIES]
    assert bool(row["rival_unchecked"]) is True


def test_the_dataframes_say_which_cards_are_light(light80: CardFile) -> None:
    """`captured_light` per card (129 of 167), and per coverage stage the light shapes and their
    program time per inference, as the coverage line prints them."""
    cards = cards_frame(light80)
    assert cards["captured_light"].dtype == bool
    assert int(cards["captured_light"].sum()) == 129
    assert cards.loc[cards["captured_light"], "sm_pct"].isna().all()
    assert cards.loc[~cards["captured_light"], "sm_pct"].notna().all()
    stages = cards_frame(light80, "coverage").set_index("item").loc["(stage)"].set_index("stage")
    assert stages["light_shapes"].to_dict() == {"dit": 19, "output": 5, "vae": 105}
    light_ms = (stages["light_real_us_per_inference"] / 1000).round(3).to_dict()
    assert light_ms == {"dit": 47.77, "output": 0.036, "vae": 59.937}


UNRESOLVED = "unresolved_no_dominant_limiter"
# (whole capture's class, light class, passed over an unchecked rule); COUNTS: cards per outcome
OUTCOMES = (
    ("dram_bandwidth_bound", "dram_bandwidth_bound", True),
    ("compute_bound", "compute_bound", False),
    (UNRESOLVED, UNRESOLVED, False),
    ("l2_bandwidth_bound", UNRESOLVED, False),
    ("partial_wave_tail", "partial_wave_tail", True),
    ("l2_bandwidth_bound", "partial_wave_tail", True),
    ("latency_or_occupancy_limited", UNRESOLVED, False),
    ("partial_wave_tail", UNRESOLVED, False),
)
COUNTS = {"light80": (77, 15, 14, 11, 6, 4, 1, 1), "light90": (59, 10, 11, 9, 6, 4, 1, 1)}


@pytest.mark.parametrize("light", sorted(COUNTS))
def test_light_verdicts_against_the_whole_capture(
    light: str, whole: CardFile, rules: LoadedRules
) -> None:
    """(whole class, light class, passed over an unchecked rule) per light card. Every
    compute-bound card stays compute-bound without sm_pct, decided by the tensor pipe or by
    instruction issue (sm_pct >= issue_pct); before that bound 5 of the 15 read DRAM-bound and 4
    unresolved. The only wrong classes left, 4 L2-bound cards read as tails, say that they
    passed over a rule they could not check. The full cards keep the whole capture's class but
    for two borderline ones (another capture: an l2_pct and an sm_pct within 0.3 points of 60)."""
    cards = _judged(light, rules)
    classes = {card.group: card.primary for card in whole.cards}
    none = Margin(metric=None, distance=None, alternative=None, borderline=False)
    margins = {c.group: named_dominant(c).margin or none for c in cards.cards}
    seen = collections.Counter(
        (classes[c.group], c.primary, margins[c.group].rival_unchecked)
        for c in cards.cards
        if c.captured_light
    )
    assert seen == dict(zip(OUTCOMES, COUNTS[light], strict=True))
    full = [c for c in cards.cards if not c.captured_light]  # a flip is a borderline one
    assert all(c.primary == classes[c.group] or margins[c.group].borderline for c in full)
    assert sum(c.primary == classes[c.group] for c in full) >= len(full) - 2
    decided = {
        margins[c.group].metric
        for c in cards.cards
        if c.captured_light and c.primary == "compute_bound"
    }
    assert decided == {"issue_pct", "tensor_pct"}
