"""The cards of a real light capture: the Wan 14B recording captured on one H100 by
`capture --coverage 99.5 --light-after 80` (reports/coverage/device_light.sh, 2026-12-05) and
classified there. What the light tier measured, how the coverage lines count it, and what
summary, next and the DataFrames say of it."""

from __future__ import annotations

import collections
import lzma

import pytest
from helpers import ROOT

from ncu_classify.cards.model import CardFile
from ncu_classify.cards.rollup import named_dominant
from ncu_classify.present.frames import cards_frame
from ncu_classify.present.summary import light_lines

LIGHT80 = ROOT / "reports" / "coverage" / "cards_wan14b_light80_h100.json.xz"
TWO_COPIES = "vae:aten.cat.default:1x384x1x120x208:fp32"  # two copy kernels of one name


@pytest.fixture(scope="module")
def light80() -> CardFile:
    return CardFile.model_validate_json(lzma.open(LIGHT80).read())


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
        "captured light: 129 cards without sm_pct and l2_pct; 31 unresolved (27,176.3 us per"
        " inference), 92 classed past a rule they could not check (89,354.6 us per inference);"
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
    assert top.metrics["dur_us"] == 60.704
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
