"""A program-wide move's result: per stage, the changed shapes' time as recorded and as
changed (calls x the mean per call over the repeats), the saving with its Student-t interval
(Welch-Satterthwaite over the sum), and every shape that failed or went away, named."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from ..cards.model import Card
from ..core.stats import t95
from .program import ProgramMove, ProgramPlan


class StageSaving(BaseModel):
    """One stage under a program-wide move (us per inference)."""

    model_config = ConfigDict(extra="forbid")
    stage: str
    shapes: int = Field(description="shapes the move changes (measured both ways)")
    as_recorded_us: float
    changed_us: float
    saving_us: float
    saving_ci95_us: tuple[float, float] | None
    removed: list[str] = Field(description="shapes the move removes (their time is saved)")
    failed: list[str] = Field(description="shapes not measured both ways: left out of the sums")


class ProgramResult(BaseModel):
    """What a program-wide move saves, stage by stage."""

    model_config = ConfigDict(extra="forbid")
    move: ProgramMove
    unchanged: int
    stages: list[StageSaving]


class _Sums:
    """Running sums of one stage: times, variances and Welch's degrees-of-freedom terms."""

    def __init__(self) -> None:
        self.shapes, self.before, self.after, self.var, self.df_terms = 0, 0.0, 0.0, 0.0, 0.0
        self.removed: list[str] = []
        self.failed: list[str] = []

    def add(self, calls: int, *times: tuple[float, float | None, int] | None) -> None:
        """A pair's (mean, sd of the mean, n) as recorded and changed (None: removed)."""
        self.shapes += 1
        before, after = times
        assert before is not None
        self.before += calls * before[0]
        self.after += calls * after[0] if after else 0.0
        for mean_time in (t for t in (before, after) if t is not None):
            if mean_time[1] is not None and mean_time[2] > 1:
                term = (calls * mean_time[1]) ** 2
                self.var += term
                self.df_terms += term**2 / (mean_time[2] - 1)


def program_result(plan: ProgramPlan, cards: dict[str, Card]) -> ProgramResult:
    """Each stage's sums over the pairs measured both ways (removed ops count as saved)."""
    sums: dict[str, _Sums] = {}
    for pair in plan.pairs:
        stage = pair.original.split(":", 1)[0]
        total = sums.setdefault(stage, _Sums())
        before = _mean(cards.get(pair.original))
        after = _mean(cards.get(pair.changed)) if pair.changed else None
        if before is None or (pair.changed is not None and after is None):
            total.failed.append(pair.group)
            continue
        if pair.changed is None:
            total.removed.append(pair.group)
        total.add(pair.calls, before, after)
    return ProgramResult(
        move=plan.move, unchanged=plan.unchanged,
        stages=[_saving(stage, s) for stage, s in sums.items()],
    )  # fmt: skip


def _mean(card: Card | None) -> tuple[float, float | None, int] | None:
    """(mean per call, standard error of it, n) of a card's summed kernel time."""
    if card is None:
        return None
    spread = card.measurement.summed_kernel_us if card.measurement else None
    if spread is not None:
        se = spread.sd / math.sqrt(spread.n) if spread.sd is not None else None
        return spread.mean, se, spread.n
    return (card.summed_kernel_us, None, 1) if card.summed_kernel_us is not None else None


def _saving(stage: str, s: _Sums) -> StageSaving:
    """The stage's figures, the interval from the summed variances."""
    saving = round(s.before - s.after, 3)
    interval = None
    if s.var > 0 and s.df_terms > 0:
        df = max(1, int(s.var**2 / s.df_terms))
        half = t95(df) * math.sqrt(s.var)
        interval = (round(saving - half, 3), round(saving + half, 3))
    return StageSaving(
        stage=stage, shapes=s.shapes, as_recorded_us=round(s.before, 3),
        changed_us=round(s.after, 3), saving_us=saving, saving_ci95_us=interval,
        removed=s.removed, failed=s.failed,
    )  # fmt: skip
