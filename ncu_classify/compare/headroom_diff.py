"""Headroom before and after a change, per stage: the recoverable time of both sides, and how
much of the baseline's speed-of-light headroom the change took (a change that saves 500 us of
1,380 us recoverable took 36 % of it; one that saves more beat the baseline's speed of light,
under another math mode or dtype, and is said so, never a share above 100 %). Only shapes
timed on both sides count as saved: a shape the candidate lost is not a saving."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..cards.headroom import stage_totals
from ..cards.model import Card
from ..core.ordering import stage_order
from .matching import CardPair
from .model import HeadroomChange


def _saved(pairs: Sequence[tuple[str, CardPair]]) -> dict[str, float]:
    """Per stage, baseline minus candidate time per inference over the pairs timed on both."""
    out: dict[str, float] = {}
    for stage, pair in pairs:
        one, other = pair.baseline, pair.candidate
        if one is None or other is None or pair.repeat:
            continue
        if one.summed_kernel_us is None or other.summed_kernel_us is None:
            continue
        delta = one.summed_kernel_us * one.calls - other.summed_kernel_us * other.calls
        out[stage] = out.get(stage, 0.0) + delta
    return out


def headroom_changes(
    baseline: list[Card],
    candidate: list[Card],
    pairs: Sequence[tuple[str, CardPair]],
    aliases: Mapping[str, str] | None = None,
) -> list[HeadroomChange]:
    """Per stage present on either side (in stage order), both sides' headroom totals and the
    time the paired shapes saved; `pairs` are (compared stage, pair); `aliases`: the baseline
    stage each loose candidate stage was compared with, under which its totals go (as in the
    roll-up: `h200_run` under `h100_run`)."""
    named = aliases or {}
    before = stage_totals(baseline)
    after = stage_totals(candidate, lambda card: named.get(card.stage, card.stage))
    saved = _saved(pairs)
    out = []
    for stage in stage_order([*before, *after, *saved]):
        one, other = before.get(stage), after.get(stage)
        took = round(saved[stage], 3) if stage in saved else None
        room = one.recoverable_at_sol_us if one else None
        # saving more than the baseline could at its speed of light (also where it could save
        # nothing), the candidate beat the SOL of the baseline's own math mode: no share
        beat = took is not None and room is not None and round(took, 3) > room
        share = round(100 * took / room, 2) if took is not None and room and not beat else None
        out.append(
            HeadroomChange(
                stage=stage,
                baseline=one,
                candidate=other,
                saved_us=took,
                saved_of_sol_pct=share,
                beat_baseline_sol=beat,
            )
        )
    return out
