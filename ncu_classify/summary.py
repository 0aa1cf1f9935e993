"""Per-stage summary of a cards file: cards per primary class and their share of kernel time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SummaryRow:
    """One (stage, class) cell: how many cards, and their summed kernel time."""

    stage: str
    primary: str
    cards: int
    kernel_us: float
    share_of_stage: float | None  # of the stage's summed kernel time; None if no time known


def card_key(card: dict[str, Any]) -> str:
    """The class a card counts under: its primary, else its status (failed, incomplete...)."""
    return str(card.get("primary") or card.get("status") or "unresolved")


def summarize(doc: dict[str, Any]) -> list[SummaryRow]:
    """Rows per stage (in first-seen order) and class (most time first)."""
    cells: dict[str, dict[str, list[float]]] = {}
    for card in doc["cards"]:
        stage = str(card.get("stage"))
        cell = cells.setdefault(stage, {}).setdefault(card_key(card), [0, 0.0])
        cell[0] += 1
        us = card.get("summed_kernel_us")
        cell[1] += float(us) if isinstance(us, (int, float)) else 0.0
    rows: list[SummaryRow] = []
    for stage, classes in cells.items():
        total = sum(us for _, us in classes.values())
        for primary, (count, us) in sorted(classes.items(), key=lambda kv: (-kv[1][1], kv[0])):
            share = us / total if total else None
            rows.append(SummaryRow(stage, primary, int(count), round(us, 3), share))
    return rows
