"""Where the time is, ranked: headroom per inference per stage and overall, and the next moves,
each card's recoverable microseconds per inference at its kernels' roofs and at the op's speed
of light, with what to try, made concrete from the card's own facts. The JSON (`ncu-classify
next -o F.json`, schema `ncu-classify schema --next`) is written for programs: stable field
names, microseconds per inference (a card's figure x its calls) unless a name says per call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..cards.coverage import StageCoverage
from ..cards.headroom import CardHeadroom, StageTotals, card_headroom, stage_totals
from ..cards.model import Card, CardFile
from ..cards.rollup import dominant
from ..core.ordering import stage_order
from .advice import Advice, advise
from .advice import try_next as try_next  # the one-line advice, published here since 1.0
from .coverage import unknown_why
from .next_measured import MeasuredMove, RankedBy, StageMeasured, measured_move, stage_measured

if TYPE_CHECKING:
    from ..tries.results import TryResults

NEXT_SCHEMA_VERSION = "1.3"
OVERALL = "(all stages)"  # the overall row's label: no stage name has parentheses around it


class Move(BaseModel):
    """One card as a candidate for the next change."""

    model_config = ConfigDict(extra="forbid")
    rank: int = Field(description="1 = most recoverable at the speed of light")
    stage: str
    group: str
    op: str
    calls: int
    primary: str | None = Field(description="the card's first verdict")
    settled: str | None = Field(description="the class a drill-down settled it on")
    light_unchecked: str | None = Field(
        default=None,
        description="captured light (capture --light-after): what its verdict could not check;"
        " None: captured with every metric",
    )
    hot_unit: str | None = Field(description="the dominant kernel's busiest SM unit, % of peak")
    try_next: str = Field(
        description="what to try, from the card's own facts: the advice's sentences"
    )
    advice: list[Advice] = Field(
        default_factory=list,
        description="what to try, one idea each: its kind, its sentence and why (the card's"
        " facts that justify it); never what the kernel already is",
    )
    measured_us: float = Field(description="per inference")
    kernel_roof_us: float | None = Field(
        description="per inference: every kernel at its roof (measured - the recoverable)"
    )
    recoverable_at_kernel_roof_us: float | None = Field(
        description="per inference: the sum of its kernels' headroom; None: no kernel roof"
    )
    at_sol_us: float | None = Field(
        description="per inference: the op at its speed of light (measured - the recoverable)"
    )
    recoverable_at_sol_us: float | None = Field(
        description="per inference: measured - the op at its speed of light; None: no SOL"
    )
    sol_pct: float | None = Field(description="speed of light / measured, %")
    headroom: CardHeadroom = Field(description="the figures per call")
    ranked_by: RankedBy = Field(
        default="headroom",
        description="measured: ranked by what `try` measured it saves; headroom: by its"
        " recoverable time at SOL (not tried)",
    )
    measured: MeasuredMove | None = Field(
        default=None, description="what `try` measured for it (next --tries); None: not tried"
    )


# the docstring is the published schema's description: its wording waits for a schema bump
class NextMoves(BaseModel):
    """The `next` report: per stage and overall, and every move ranked."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = NEXT_SCHEMA_VERSION
    cards_file: str
    units: str = "microseconds per inference unless a field says per call"
    stages: list[StageTotals]
    overall: StageTotals
    coverage: list[StageCoverage] = Field(
        description="per stage of a recorded program: the share of its real kernel time the"
        " cards cover (empty: coverage unknown, `coverage_unknown` says why)"
    )
    coverage_unknown: str | None = Field(
        default=None,
        description="why coverage is unknown (not made from a recording, or a capture folder"
        " read without its manifest.json); null when it is known",
    )
    moves: list[Move]
    tries_files: list[str] = Field(default_factory=list, description="the `try` results read")
    measured: list[StageMeasured] = Field(
        default_factory=list, description="per stage: what the measured moves save"
    )
    projection: str | None = Field(
        default=None, exclude=True, description="a projected cards file: its projection line"
    )


def per_inference(measured: float, recoverable: float | None) -> tuple[float | None, float | None]:
    """(floor, recoverable) of a per-inference figure: measured = floor + recoverable to the
    nanosecond; (None, None) when unknown."""
    if recoverable is None:
        return None, None
    recoverable = round(recoverable, 3) + 0.0
    return round(measured - recoverable, 3) + 0.0, recoverable


def light_unchecked(card: Card) -> str | None:
    """What a light card's verdict could not check: the earlier rule it passed over and the
    metric that rule lacked, or the metrics an unresolved one lacked; None for a full card."""
    if not card.captured_light:
        return None
    top = dominant(card.kernels)
    margin = top.margin if top is not None else None
    if margin is not None and margin.rival_unchecked:
        return f"{margin.alternative} not checked: {margin.alternative_metric} not measured"
    lacked = ", ".join(top.unchecked_metrics) if top is not None else ""
    return f"{lacked or 'sm_pct, l2_pct'} not measured"


def _move(card: Card, room: CardHeadroom) -> Move:
    top = dominant(card.kernels)
    measured = round(room.measured_us * card.calls, 3)
    roof, roof_gain = per_inference(
        measured, None if room.kernel_headroom_us is None else room.kernel_headroom_us * card.calls
    )
    sol, sol_gain = per_inference(
        measured, None if room.sol_headroom_us is None else room.sol_headroom_us * card.calls
    )
    units = top.hot_units.get("sm") if top is not None else None
    ideas = advise(card)
    return Move(
        rank=0,
        stage=card.stage,
        group=card.group,
        op=card.op,
        calls=card.calls,
        primary=card.primary,
        settled=card.settled.primary if card.settled else None,
        light_unchecked=light_unchecked(card),
        hot_unit=f"{units[0].label} {units[0].pct:.1f} %" if units else None,
        try_next="; ".join(a.text for a in ideas),
        advice=ideas,
        measured_us=measured,
        kernel_roof_us=roof,
        recoverable_at_kernel_roof_us=roof_gain,
        at_sol_us=sol,
        recoverable_at_sol_us=sol_gain,
        sol_pct=room.sol_pct,
        headroom=room,
    )


def next_moves(
    cards: CardFile, label: str, stages: Iterable[str] = (),
    tries: Sequence[tuple[str, TryResults]] = (),
) -> NextMoves:  # fmt: skip
    """Headroom per stage and overall, and every timed card as a move, ranked by what `try`
    measured it saves where it was tried, else by what the speed of light would recover per
    inference (then by the kernel roof's)."""
    wanted = set(stages)
    kept = [card for card in cards.cards if not wanted or card.stage in wanted]
    moves = [_move(card, room) for card in kept if (room := card_headroom(card)) is not None]
    tried = {m.group: (name, m) for name, result in tries for m in result.moves}
    for move in moves:
        if move.group in tried:
            name, found = tried[move.group]
            move.measured, move.ranked_by = measured_move(found, name), "measured"
    moves.sort(key=_rank_key)
    per_stage = stage_totals(kept)
    measured = [
        stage_measured(stage, [m.measured for m in moves if m.stage == stage and m.measured],
                       [r for _, r in tries])
        for stage in stage_order([
            *(m.stage for m in moves if m.measured),
            *(s.stage for _, r in tries for s in (r.program.stages if r.program else [])
              if s.stage in per_stage),  # a program-wide move alone is measured too
            *(m.stage for _, r in tries for m in r.moves
              if m.op in ("chain", "fold") and m.stage in per_stage),  # fusion, folds alone
        ])
    ]  # fmt: skip
    return NextMoves(
        tries_files=[name for name, _ in tries],
        measured=measured,
        cards_file=label,
        coverage=[c for c in cards.coverage if not wanted or c.stage in wanted],
        coverage_unknown=None if cards.coverage else unknown_why(cards),
        stages=[per_stage[name] for name in stage_order([*(m.stage for m in moves), *per_stage])],
        overall=stage_totals(kept, lambda _: OVERALL).get(OVERALL) or _NOTHING,
        moves=[m.model_copy(update={"rank": n}) for n, m in enumerate(moves, 1)],
        projection=cards.projection.line() if cards.projection is not None else None,
    )


def _rank_key(m: Move) -> tuple[float, float, float, str]:
    """The measured saving where there is one, else the recoverable time at SOL; among equals
    (none known: a light card has no roofline), the larger measured time first."""
    if m.measured is not None:
        first = m.measured.saving_us or 0.0
    else:
        first = m.recoverable_at_sol_us or 0.0
    return -first, -(m.recoverable_at_kernel_roof_us or 0.0), -m.measured_us, m.group


_NOTHING = StageTotals(
    stage=OVERALL, cards=0, cards_without_figures=0, measured_us=0.0, kernel_roof_us=None,
    recoverable_at_kernel_roof_us=None, at_sol_us=None, recoverable_at_sol_us=None,
    cards_without_sol=0,
)  # fmt: skip
