"""Headroom before and after a change, per stage: the recoverable time of both sides, and how
much of the baseline's speed-of-light headroom the change took (a change that saves 500 us of
1,380 us recoverable took 36 % of it)."""

from __future__ import annotations

from ..cards.headroom import stage_totals
from ..cards.model import Card
from ..core.ordering import stage_order
from .model import HeadroomChange


def headroom_changes(baseline: list[Card], candidate: list[Card]) -> list[HeadroomChange]:
    """Per stage present on either side (in stage order), both sides' headroom totals."""
    before, after = stage_totals(baseline), stage_totals(candidate)
    out = []
    for stage in stage_order([*before, *after]):
        one, other = before.get(stage), after.get(stage)
        saved = round(one.measured_us - other.measured_us, 3) if one and other else None
        room = one.recoverable_at_sol_us if one else None
        share = round(100 * saved / room, 2) if saved is not None and room else None
        out.append(
            HeadroomChange(
                stage=stage, baseline=one, candidate=other, saved_us=saved, saved_of_sol_pct=share
            )
        )
    return out
