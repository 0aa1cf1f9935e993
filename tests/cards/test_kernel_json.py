"""The kernel cards' JSON made by classify's readers is spliced into the cards file only for
the very card it was made from: the file is byte for byte what pydantic writes of the cards,
also where a card was replaced after it was read (a model_copy is another object); the cards
themselves carry nothing of it (equal runs compare equal, pickles stay small)."""

from __future__ import annotations

import json
import pickle

import pytest
from helpers import ROOT, SMOKE

from ncu_classify.cards.files import KernelJson, card_file_text
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules


def test_the_readers_json_is_what_pydantic_writes() -> None:
    made = KernelJson()
    cards = classify([SMOKE], load_rules(), jobs=2, kernel_json=made)
    kernels = [kernel for card in cards.cards for kernel in card.kernels]
    assert len(kernels) == 13 and all(made.text(k) is not None for k in kernels)
    with_texts = card_file_text(cards, made)
    assert card_file_text(cards) == with_texts
    # and what pydantic writes of each card, with the file's one-card-per-line layout
    lines = with_texts.split('  "cards": [\n')[1].split("\n  ]")[0].split(",\n")
    assert [line.strip() for line in lines] == [
        card.model_dump_json(exclude_unset=True) for card in cards.cards
    ]


@pytest.mark.parametrize(
    "folder",
    [ROOT / "fixtures" / "user_set_full", ROOT / "fixtures" / "set_full_h200" / "capture"],
    ids=["user's set full, drill-down", "our set full"],
)
def test_the_readers_json_equals_pydantics_on_every_kind_of_kernel(folder) -> None:
    """Kernels with a drill-down section (warp-state counters) and `--set full` kernels too:
    the readers leave out a card's unset fields by name, pydantic's `exclude_unset` also
    looks into every nested model."""
    made = KernelJson()
    cards = classify([folder], load_rules(), jobs=1, kernel_json=made)
    kernels = [kernel for card in cards.cards for kernel in card.kernels]
    texts = [made.text(kernel) for kernel in kernels]
    assert kernels and None not in texts
    if folder.name == "user_set_full":  # warp-state counters: each kernel's own drill-down
        assert sum(kernel.drill_down is not None for kernel in kernels) == len(kernels) == 4
    assert texts == [kernel.model_dump_json(exclude_unset=True) for kernel in kernels]


def test_a_card_replaced_after_it_was_read_is_written_as_it_is_now() -> None:
    made = KernelJson()
    cards = classify([SMOKE], load_rules(), jobs=1, kernel_json=made)
    first = cards.cards[0]
    old = first.kernels[0]
    changed = old.model_copy(update={"classification": "changed_after_reading"})
    assert made.text(old) is not None and made.text(changed) is None
    edited = cards.model_copy(
        update={"cards": [first.model_copy(update={"kernels": [changed]}), *cards.cards[1:]]}
    )
    written = json.loads(card_file_text(edited, made))
    assert written["cards"][0]["kernels"][0]["classification"] == "changed_after_reading"
    assert written["cards"][1:] == json.loads(card_file_text(cards, made))["cards"][1:]


def test_the_cards_carry_none_of_it() -> None:
    made = KernelJson()
    one = classify([SMOKE], load_rules(), jobs=2, kernel_json=made)
    other = classify([SMOKE], load_rules(), jobs=2).model_copy(
        update={"generated_at": one.generated_at}
    )
    assert one == other
    assert len(pickle.dumps(one)) == len(pickle.dumps(other))
