"""The HTML report of a file with more cards than it shows in full (SHOWN_CARDS): the real Wan
2.1 14B cards copied into new stages, so every figure is a real card's."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from helpers import RECORD, derived_path

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.cards.rollup import by_stage
from ncu_classify.present.page import page_html, page_markdown
from ncu_classify.present.page_view import SHOWN_CARDS, build_view

WAN14B = RECORD / "cards_wan14b_every_op_480x832.json"  # derived_path: the session's
COPIES = 3  # 759 cards, 1,176 kernels: past SHOWN_CARDS


@pytest.fixture(scope="module")
def large(derived_cards: Path) -> CardFile:
    """COPIES copies of the Wan 14B cards, copy c in stages `S.cN`."""
    cards = load_card_file(derived_path(WAN14B, derived_cards))
    copies = [
        card.model_copy(update={"stage": f"{card.stage}.c{c}", "group": f"{card.group}#c{c}"})
        for c in range(COPIES)
        for card in cards.cards
    ]
    return cards.model_copy(update={"cards": copies, "coverage": []})


def _us(card: object) -> float:
    us = card.summed_kernel_us  # type: ignore[attr-defined]
    return 0.0 if us is None else us * card.calls  # type: ignore[attr-defined]


def test_view_shows_the_longest_cards_and_lists_the_rest(large: CardFile) -> None:
    view = build_view([("big", large)], "big")
    cards = large.cards
    assert len(cards) == 759 > SHOWN_CARDS
    assert len(view.cards) == SHOWN_CARDS
    shown = [int(c.anchor.split("c")[1]) for c in view.cards]
    assert shown == sorted(shown)  # file order, anchors of the whole file
    cut = min(_us(cards[i]) for i in shown)
    assert all(_us(cards[i]) <= cut for i in set(range(len(cards))) - set(shown))
    assert [m.count for m in view.more] == [len(cards) - SHOWN_CARDS]
    assert len(view.more[0].text.split("\n")) == len(cards) - SHOWN_CARDS
    # the chart holds only kernels of the cards shown, so every marker links to a card
    anchors = {c.anchor for c in view.cards}
    assert {p.anchor for p in view.points} <= anchors
    kernels = sum(len(cards[i].kernels) for i in shown)
    assert len(view.points) + view.off_chart + view.out_of_range == kernels
    # time tables count every card
    assert view.files[0].stages == by_stage(cards)


def test_page_holds_every_shape_and_stage(large: CardFile) -> None:
    page = page_html([("big", large)], "big")
    assert len(page) < 4_000_000  # 1,176 kernels; every card in full was 3.7 MB
    text = html.unescape(page)
    for card in large.cards:
        assert card.group in text
    body = re.search(r"<table id=\"cards\">.*?</table>", page, re.S)
    assert body is not None and body.group(0).count("<tr data-anchor=") == SHOWN_CARDS
    assert page.count('<details id="f0c') == SHOWN_CARDS
    assert f"{len(large.cards) - SHOWN_CARDS:,} more cards" in page
    stages = {card.stage for card in large.cards}
    table = re.search(r'<table class="stages".*?</table>', page, re.S)
    assert table is not None
    assert {s for s in stages if f"<td>{s}</td>" in table.group(0)} == stages


def test_markdown_top_consumers_unchanged_by_the_cut(large: CardFile) -> None:
    """The Markdown's top 10 come from the cards shown, which are the longest: the same rows
    as when every card is shown."""
    text = page_markdown([("big", large)], "big")
    top = sorted(large.cards, key=lambda c: -_us(c))[:10]
    section = text.split("### Top 10 time consumers per file")[1].split("\n###")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ● `big` | `")]
    assert [row.split("`")[3] for row in rows] == [c.group for c in top]


def test_small_file_is_shown_whole(derived_cards: Path) -> None:
    cards = load_card_file(derived_path(WAN14B, derived_cards))
    view = build_view([("wan", cards)], "wan")
    assert len(view.cards) == len(cards.cards) and view.more == []


def test_stage_totals_are_the_sum_over_every_card(large: CardFile) -> None:
    """The cut changes what is shown, not what is counted: the stage table's time is the sum
    over all 759 cards, hidden ones included."""
    view = build_view([("big", large)], "big")
    timed = [c for c in large.cards if c.summed_kernel_us is not None]
    total = sum(row.kernel_us for row in view.files[0].stages)
    assert total == pytest.approx(sum(_us(c) for c in timed), rel=1e-12)
    assert sum(row.cards for row in view.files[0].stages) == len(large.cards)
