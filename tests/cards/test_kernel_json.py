"""The kernel cards' JSON made by classify's readers is spliced into the cards file only for
the very card it was made from: the file is byte for byte what pydantic writes of the cards,
also where a card was changed after it was read (a model_copy is another object)."""

from __future__ import annotations

import json

from conftest import SMOKE

from ncu_classify.cards.files import card_file_text
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules


def test_the_readers_json_is_what_pydantic_writes() -> None:
    cards = classify([SMOKE], load_rules(), jobs=2)
    kernels = [kernel for card in cards.cards for kernel in card.kernels]
    spliced = [kernel for kernel in kernels if cards.kernel_json(kernel) is not None]
    assert len(kernels) == 13 and len(spliced) == 13  # every kernel's text came from a reader
    with_texts = card_file_text(cards)
    assert card_file_text(cards.model_copy().keep_kernel_json({})) == with_texts
    # and what pydantic writes of each card, with the file's one-card-per-line layout
    lines = with_texts.split('  "cards": [\n')[1].split("\n  ]")[0].split(",\n")
    assert [line.strip() for line in lines] == [
        card.model_dump_json(exclude_unset=True) for card in cards.cards
    ]


def test_a_card_changed_after_it_was_read_is_written_as_it_is_now() -> None:
    cards = classify([SMOKE], load_rules(), jobs=1)
    first = cards.cards[0]
    old = first.kernels[0]
    changed = old.model_copy(update={"classification": "changed_after_reading"})
    assert cards.kernel_json(old) is not None and cards.kernel_json(changed) is None
    edited = cards.model_copy(
        update={"cards": [first.model_copy(update={"kernels": [changed]}), *cards.cards[1:]]}
    )
    written = json.loads(card_file_text(edited))
    assert written["cards"][0]["kernels"][0]["classification"] == "changed_after_reading"
    assert written["cards"][1:] == json.loads(card_file_text(cards))["cards"][1:]
