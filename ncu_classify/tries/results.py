"""What each alternative really saves: the tries capture's cards set against the plan. Per
move, the original as recorded and each alternative with the kernels it ran, its time per call
with a Student-t interval over the repeats, the saving per inference (Welch's interval of the
difference), its numerics against the original, and the winner: the largest saving whose
interval stays above zero and whose output was compared and is within tolerance (an
alternative whose output was not compared is listed with why, and cannot win)."""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ..capture.manifest import Manifest
from ..cards.model import Card, CardFile
from ..core.stats import Spread, t95
from ..replay.protocol import sample_stem
from ..shapes.aten import SHORT_DTYPE, AtenShape
from ..shapes.chain_shape import ChainShape
from ..shapes.file import Shape, ShapesFile
from ..shapes.ops import CastShape
from .catalog import MoveKind
from .numerics import Numerics, compare_outputs, lowest_precision
from .overlap import counted_once
from .plan_models import PlannedMove, PlannedTry, TryPlan
from .program_results import ProgramResult, program_result

TRIES_VERSION = "1.1"


class TimePerCall(BaseModel):
    """Summed kernel time of one call (us): the mean over the launches measured."""

    model_config = ConfigDict(extra="forbid")
    mean_us: float
    ci95_low_us: float | None
    ci95_high_us: float | None
    n: int


class TriedAlternative(BaseModel):
    """One alternative as measured, or why it was not."""

    model_config = ConfigDict(extra="forbid")
    label: str
    kind: MoveKind
    why: str
    group: str
    status: str = Field(description="ok, or failed: the reason (no backend, compile, OOM)")
    kernels: list[str] = Field(default_factory=list, description="the kernels it ran, in order")
    primary: str | None = Field(default=None, description="what bounds its dominant kernel")
    time: TimePerCall | None = None
    saving_us: float | None = Field(default=None, description="per inference: (orig - alt) x calls")
    saving_ci95_us: tuple[float, float] | None = Field(
        default=None, description="Welch's 95 % interval of the saving per inference"
    )
    numerics: Numerics | None = None
    not_eligible: str | None = Field(
        default=None,
        description="why it cannot be the winner whatever it saves: numerics not compared:"
        " <why> (a tile-padding move's padded output that cannot be compared may still win)",
    )


class TriedMove(BaseModel):
    """A move: its card, the original timed again, every alternative, and the winner."""

    model_config = ConfigDict(extra="forbid")
    rank: int
    stage: str
    group: str
    op: str
    calls: int
    recoverable_at_sol_us: float | None = Field(description="per inference, from the cards")
    original: TriedAlternative
    alternatives: list[TriedAlternative]
    winner: str | None = Field(description="the label of the best alternative, None: none helps")
    measured_saving_us: float | None = Field(description="the winner's saving per inference")


class TryResults(BaseModel):
    """`tries.json`: every move measured, and each stage's total of its winners."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = TRIES_VERSION
    cards_file: str
    shapes_file: str
    gpu: str | None
    repeats: int
    moves: list[TriedMove]
    stage_savings_us: dict[str, float] = Field(
        description="per stage: the winners' savings, an op's counted once (tries.overlap)"
    )
    overlap_us: dict[str, float] = Field(
        default_factory=dict,
        description="per stage: per-op savings left out, a winning chain of the run holds them",
    )
    not_found: list[str]
    program: ProgramResult | None = Field(
        default=None, description="a program-wide move: what it saves per stage"
    )


def tried_results(
    plan: TryPlan, cards: CardFile, manifest: Manifest, shapes: ShapesFile, outputs: Path
) -> TryResults:
    """The plan's moves measured: each try's card (or its failure) and numerics."""
    by_group = {card.group: card for card in cards.cards}
    failures = {s.group: s.error or s.status for s in manifest.shapes if s.status != "ok"}
    precision = {e.group: _precision(e.shape) for e in shapes.entries()}
    moves = []
    for move in plan.moves:
        measured = [_tried(t, by_group.get(t.group), failures.get(t.group)) for t in move.tries]
        original, rest = measured[0], measured[1:]
        for alt in rest:
            _against(alt, original, move.calls)
            if alt.status == "ok" and original.status == "ok":
                floor = lowest_precision(precision[original.group], precision[alt.group])
                alt.numerics = compare_outputs(
                    outputs, sample_stem(original.group), sample_stem(alt.group), floor
                )
                alt.not_eligible = _uncompared(alt.numerics, alt.kind)
        moves.append(_with_winner(move, original, rest))
    savings, overlap = counted_once(moves, shapes)
    program = program_result(plan.program, by_group) if plan.program else None
    return TryResults(
        program=program,
        cards_file=plan.cards_file,
        shapes_file=plan.shapes_file,
        gpu=cards.cards[0].gpu.name if cards.cards else None,
        repeats=max((c.measurement.repeats for c in cards.cards if c.measurement), default=1),
        moves=moves,
        stage_savings_us=savings,
        overlap_us=overlap,
        not_found=plan.not_found,
    )


def _precision(shape: Shape) -> str:
    """The precision a shape computes in: its dtype (a device op's or a chain's: its least
    precise floating tensor), TF32 for fp32 with TF32 allowed."""
    if isinstance(shape, (AtenShape, ChainShape)):
        floats = [SHORT_DTYPE[t.dtype] for t in shape.tensors() if t.dtype in SHORT_DTYPE]
        lowest = lowest_precision(*floats)
        tf32 = isinstance(shape, ChainShape) and shape.allow_tf32  # a pad fold's conv
        return "tf32" if lowest == "fp32" and tf32 else lowest
    if isinstance(shape, CastShape):
        return lowest_precision(shape.from_, shape.to)
    dtype = str(getattr(shape, "dtype", "fp32"))
    return "tf32" if dtype == "fp32" and getattr(shape, "allow_tf32", False) else dtype


def _tried(planned: PlannedTry, card: Card | None, failure: str | None) -> TriedAlternative:
    """One try from its card; failed with the manifest's reason when it has none."""
    base = TriedAlternative(
        label=planned.label, kind=planned.kind, why=planned.why, group=planned.group, status="ok"
    )
    if card is None or failure is not None:
        base.status = f"failed: {failure or 'no card: the capture holds no kernel for it'}"
        return base
    base.kernels = [k.kernel for k in card.kernels]
    base.primary = card.primary
    base.time = _time(card)
    if base.time is None:
        base.status = "failed: no kernel duration measured"
    return base


def _time(card: Card) -> TimePerCall | None:
    """The card's summed kernel time per call: the repeats' spread, else its one launch."""
    spread: Spread | None = card.measurement.summed_kernel_us if card.measurement else None
    if spread is not None:
        return TimePerCall(
            mean_us=spread.mean, ci95_low_us=spread.ci95_low, ci95_high_us=spread.ci95_high,
            n=spread.n,
        )  # fmt: skip
    if card.summed_kernel_us is None:
        return None
    return TimePerCall(mean_us=card.summed_kernel_us, ci95_low_us=None, ci95_high_us=None, n=1)


def _against(alt: TriedAlternative, original: TriedAlternative, calls: int) -> None:
    """The saving per inference and Welch's 95 % interval of it (when both have repeats)."""
    if alt.time is None or original.time is None:
        return
    alt.saving_us = round((original.time.mean_us - alt.time.mean_us) * calls, 3)
    halves = [_half(t) for t in (original.time, alt.time)]
    if None in halves:
        return
    (h1, n1), (h2, n2) = halves  # type: ignore[misc]
    se1, se2 = h1 / t95(n1 - 1), h2 / t95(n2 - 1)  # standard errors of the two means
    se = math.sqrt(se1**2 + se2**2)
    if se == 0.0:
        alt.saving_ci95_us = (alt.saving_us, alt.saving_us)
        return
    df = se**4 / (se1**4 / (n1 - 1) + se2**4 / (n2 - 1)) if se1 or se2 else n1 + n2 - 2
    half = t95(max(1, int(df))) * se * calls
    alt.saving_ci95_us = (round(alt.saving_us - half, 3), round(alt.saving_us + half, 3))


def _half(time: TimePerCall) -> tuple[float, int] | None:
    """(half-width of the mean's interval, n), None without repeats."""
    if time.ci95_low_us is None or time.ci95_high_us is None or time.n < 2:
        return None
    return (time.ci95_high_us - time.ci95_low_us) / 2, time.n


def _uncompared(numerics: Numerics, kind: MoveKind) -> str | None:
    """Why an alternative whose output should have been set against the original's cannot
    win: it was not (a sample missing, unreadable, of another shape); None when it was, or
    when a tile-padding move's outputs cannot be compared by construction (the same
    arithmetic on more rows: allowed to win, shown as not compared). Another move whose
    output grew is not the same op: it cannot win uncompared."""
    if numerics.compared or (numerics.padded and kind == "tile_padding"):
        return None
    return f"numerics not compared: {numerics.why_not or 'no reason recorded'}"


def _with_winner(
    move: PlannedMove, original: TriedAlternative, rest: list[TriedAlternative]
) -> TriedMove:
    """The move with its winner: the largest saving, its interval above zero where there is
    one, its output compared and within tolerance (a padded output that cannot be compared
    excepted: `_uncompared`)."""
    fit = [
        a for a in rest
        if a.saving_us is not None and a.saving_us > 0
        and (a.saving_ci95_us is None or a.saving_ci95_us[0] > 0)
        and a.numerics is not None and a.not_eligible is None
        and (not a.numerics.compared or a.numerics.within)
    ]  # fmt: skip
    best = max(fit, key=lambda a: (a.saving_us or 0.0, a.label), default=None)
    return TriedMove(
        rank=move.rank,
        stage=move.stage,
        group=move.group,
        op=move.op,
        calls=move.calls,
        recoverable_at_sol_us=move.recoverable_at_sol_us,
        original=original,
        alternatives=rest,
        winner=best.label if best else None,
        measured_saving_us=best.saving_us if best else None,
    )


def numerics_text(alt: TriedAlternative) -> str:
    """How an alternative's output compared, in a few words: its error against the tolerance,
    why it cannot win (`numerics not compared: <why>`), or a padded shape that could not be
    compared and may win."""
    n = alt.numerics
    if n is None:
        return "numerics: none"
    if n.compared and n.max_rel_error is not None:
        ok = "ok" if n.within else "BEYOND"
        return f"rel err {n.max_rel_error:.2g} ({ok} {n.tolerance_of})"
    if n.compared:  # not finite in one output
        return f"numerics BEYOND {n.tolerance_of}: {n.why_not}"
    if alt.not_eligible is None and n.padded:
        return "numerics: not compared (padded shape)"
    return alt.not_eligible or f"numerics not compared: {n.why_not}"


MAX_TRIES_BYTES = 64 << 20  # a tries.json of thousands of moves is a few MB


def load_results(path: Path) -> TryResults:
    """A `tries.json` as `try` wrote it; a broken one is one line naming the file and place,
    as is one of a version this tool does not know (older ones read as they always did)."""
    from pydantic import ValidationError

    from ..core.errors import InputFileError, validation_line
    from ..core.jsonpos import validation_at
    from ..core.textio import read_json

    if path.is_dir():  # the folder `try -o` wrote, given for its results
        hint = (
            " (it holds none: has its capture run?)" if not (path / "tries.json").is_file() else ""
        )
        raise InputFileError(f"{path}: a folder; give the tries.json in it{hint}")
    data = read_json(path, InputFileError, MAX_TRIES_BYTES)
    if not isinstance(data, dict):
        kinds = {list: "list", str: "string", bool: "boolean", type(None): "null"}
        kind = kinds.get(type(data), "number")
        raise InputFileError(f"{path}: a JSON {kind}, not a `try` result (an object)")
    if isinstance(data.get("cards"), list):
        raise InputFileError(f"{path}: a cards file, not a `try` result (tries.json)")
    _check_version(path, data)
    try:
        return TryResults.model_validate(data)
    except ValidationError as exc:
        if _is_plan(data):
            raise InputFileError(
                f"{path}: a `try` plan (plan.json), not its results: tries.json is written"
                " beside it once the capture has run"
            ) from None
        raise InputFileError(
            f"{validation_at(path, exc)}: not a `try` result: {validation_line(exc)}"
        ) from None


def check_not_folder(path: Path) -> None:
    """InputFileError for the folder `try -o` wrote given where its tries.json is meant."""
    from ..core.errors import InputFileError

    if path.is_dir():
        there = (path / "tries.json").is_file()
        hint = "" if there else " (it holds none: has its capture run?)"
        raise InputFileError(f"{path}: a folder; give the tries.json in it{hint}")


def _check_version(path: Path, data: object) -> None:
    """InputFileError for a `schema_version` this tool does not know (a newer tool's, or no
    version number at all): its fields would be misread or refused one by one. A file without
    one, or of an older version, reads as it always did."""
    from ..core.errors import InputFileError

    version = data.get("schema_version") if isinstance(data, dict) else None
    if version is None:
        return
    found, newest = _parsed(version), _parsed(TRIES_VERSION)
    if found is not None and newest is not None and found <= newest:
        return
    what = "is newer than" if found is not None else "is no version of"
    raise InputFileError(
        f"{path}: schema_version {version!r} {what} the `try` results this tool reads"
        f" (up to {TRIES_VERSION})" + (": a newer ncu-classify wrote it" if found else "")
    )


def _parsed(version: object) -> tuple[int, int] | None:
    """`major.minor` as numbers, None for anything else."""
    if not isinstance(version, str):
        return None
    major, dot, minor = version.partition(".")
    if not (dot and major.isdigit() and minor.isdigit() and major.isascii() and minor.isascii()):
        return None
    return int(major), int(minor)


def _is_plan(data: object) -> bool:
    """True for what `try` writes as plan.json (read by mistake for tries.json)."""
    from pydantic import ValidationError

    try:
        TryPlan.model_validate(data)
    except ValidationError:
        return False
    return True
