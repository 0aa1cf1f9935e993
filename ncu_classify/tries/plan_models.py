"""The plan `try` writes (`plan.json`): the moves, each alternative by the group id its shape
carries in the tries shapes file, the cards passed over and why, a program-wide move."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .catalog import MoveKind
from .program import ProgramPlan

TRY_PLAN_VERSION = "1.0"


class PlannedTry(BaseModel):
    """One alternative of a move, by the name its shape carries in the tries shapes file."""

    model_config = ConfigDict(extra="forbid")
    group: str = Field(description="its group id in the tries capture: stage:mNN.label")
    label: str
    kind: MoveKind
    why: str


class PlannedMove(BaseModel):
    """One card to improve, and the alternatives measured for it."""

    model_config = ConfigDict(extra="forbid")
    rank: int
    stage: str
    group: str = Field(description="the card's group id in the cards file")
    op: str
    calls: int
    measured_us: float = Field(description="per call, as the cards file measured it")
    recoverable_at_sol_us: float | None = Field(description="per inference")
    tries: list[PlannedTry]


class TryPlan(BaseModel):
    """What `try` measures: the moves, and the cards it could not match to a shape."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = TRY_PLAN_VERSION
    cards_file: str
    shapes_file: str
    moves: list[PlannedMove]
    not_found: list[str] = Field(
        default_factory=list, description="top cards whose group id the shapes file lacks"
    )
    no_alternative: list[NoAlternative] = Field(
        default_factory=list, description="top cards the catalog has nothing to try for"
    )
    program: ProgramPlan | None = Field(
        default=None, description="a program-wide move: every shape of the stages changed"
    )


class NoAlternative(BaseModel):
    """A top card passed over: nothing in the catalog applies, and why."""

    model_config = ConfigDict(extra="forbid")
    group: str
    why: str
