"""Which cards a drill-down captures again: those whose verdict is unresolved, those whose
dominant kernel is borderline, those captured light whose verdict passed over a rule the light
list could not check (no sm_pct: the drill-down measures every metric), and those of the
classes the user names; never a card without a
verdict (failed, incomplete) nor one whose dominant kernel already has a drill-down."""

from __future__ import annotations

from collections.abc import Iterable

from .model import UNRESOLVED, CardFile
from .rollup import dominant


def drill_selection(cards: CardFile, classes: Iterable[str] = ()) -> dict[str, str]:
    """group id -> why it is drilled (`unresolved`, `borderline`, `unchecked`, `class <name>`),
    file order."""
    named = set(classes)
    chosen: dict[str, str] = {}
    for card in cards.cards:
        top = dominant(card.kernels)  # by time, as the card's settled verdict takes it
        if card.status not in ("classified", "unresolved") or top is None or top.drill_down:
            continue
        if card.status == "unresolved" or card.primary == UNRESOLVED:
            chosen.setdefault(card.group, "unresolved")
        elif top.margin is not None and top.margin.borderline:
            chosen.setdefault(card.group, "borderline")
        elif card.captured_light and top.margin is not None and top.margin.rival_unchecked:
            chosen.setdefault(card.group, "unchecked")
        elif card.primary in named:
            chosen.setdefault(card.group, f"class {card.primary}")
    return chosen
