"""Which moves `try` measures and how: the top cards by what their speed of light would
recover per inference, each matched to its shape in the shapes file, with the alternatives the
catalog allows; written as a shapes file (the original, as recorded, beside each alternative,
so that capture times them in one run on one GPU) and the plan that ties them back."""

from __future__ import annotations

import json
from pathlib import Path

from ..cards.headroom import card_headroom
from ..cards.model import Card, CardFile
from ..shapes.file import ShapeEntry, ShapesFile
from .catalog import Alternative, alternatives, nothing_to_try
from .chain_moves import chain_moves
from .fold_moves import fold_moves
from .plan_models import NoAlternative, PlannedMove, PlannedTry, TryPlan
from .program import ProgramMove, plan_program


def plan_tries(
    cards: CardFile, shapes: ShapesFile, labels: tuple[str, str], top: int, stages: list[str],
    chains: int = 0, folds: int = 0, sources: tuple[str, str] | None = None,
) -> tuple[TryPlan, str]:  # fmt: skip
    """The plan and the tries shapes file's text for the `top` moves (per stage when stages
    are named, else over all), ranked as `next` ranks them, then the `chains` largest chains
    of the recording (fusion moves), then its `folds` largest pads folded into their convs.
    `labels` name the inputs in plan.json; `sources` in the shapes file's first line
    (`source_names`; the labels quoted without them)."""
    entries = {entry.group: entry for entry in shapes.entries()}
    ranked = _ranked(cards, stages)
    moves: list[PlannedMove] = []
    not_found: list[str] = []
    passed: list[NoAlternative] = []
    lines = _head(sources or _quoted(labels), shapes)
    by_stage: dict[str, list[str]] = {}
    taken: dict[str, int] = {}  # moves per stage: `top` each when stages are named
    for card, recoverable in ranked:
        if len(moves) == top * max(1, len(set(stages))):
            break
        if stages and taken.get(card.stage, 0) == top:
            continue
        entry = entries.get(card.group)
        if entry is None:
            not_found.append(card.group)
            continue
        _check_same_shape(card, entry, labels)
        found = alternatives(card, entry.shape)
        if len(found) == 1:  # the original alone
            passed.append(NoAlternative(group=card.group, why=nothing_to_try(card, entry.shape)))
            continue
        moves.append(_planned(len(moves) + 1, card, entry, found, recoverable, by_stage))
        taken[card.stage] = taken.get(card.stage, 0) + 1
    moves += chain_moves(shapes, stages, chains, len(moves) + 1, by_stage, passed)
    moves += fold_moves(shapes, stages, folds, len(moves) + 1, by_stage, passed, cards)
    for stage, shaped in by_stage.items():
        lines.append(f"  {json.dumps(stage)}:")
        lines += [f"    - {text}" for text in shaped]
    plan = TryPlan(
        cards_file=labels[0], shapes_file=labels[1], moves=moves, not_found=not_found,
        no_alternative=passed,
    )  # fmt: skip
    return plan, "\n".join(lines) + "\n"


def plan_program_move(
    shapes: ShapesFile, labels: tuple[str, str], stages: list[str], move: ProgramMove,
    sources: tuple[str, str] | None = None,
) -> tuple[TryPlan, str]:  # fmt: skip
    """The plan and tries shapes file of a program-wide move over `stages`."""
    program, stage_lines = plan_program(shapes, stages, move)
    head = _head(sources or _quoted(labels), shapes)
    plan = TryPlan(cards_file=labels[0], shapes_file=labels[1], moves=[], program=program)
    return plan, "\n".join([*head, *stage_lines]) + "\n"


def source_names(cards: Path, shapes: Path) -> tuple[str, str]:
    """The inputs as the tries shapes file's first line names them: the file's name and the
    start of its sha256, the same however its path was typed (`x`, `./x`, `/abs/x`) and on
    any machine, so that the same inputs write the same bytes."""
    import hashlib

    from ..core.text import unicode_safe

    named = []
    for path in (cards, shapes):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        named.append(f"{json.dumps(unicode_safe(path.name))} (sha256 {digest.hexdigest()[:16]})")
    return named[0], named[1]


def _quoted(labels: tuple[str, str]) -> tuple[str, str]:
    """The labels as JSON strings (what the first line held before `source_names`)."""
    return json.dumps(labels[0]), json.dumps(labels[1])


def shapes_body(text: str) -> str:
    """A tries shapes file without its first line (the comment naming its inputs): what the
    capture replays, the plan's identity however its inputs were named."""
    first, _, rest = text.partition("\n")
    return rest if first.startswith("# Written by ncu-classify try") else text


def _head(sources: tuple[str, str], shapes: ShapesFile) -> list[str]:
    """The tries shapes file's first lines: where it came from, the replay settings."""
    return [
        f"# Written by ncu-classify try from {sources[0]} and {sources[1]}",
        f"seed: {shapes.seed}",
        f"warmup: {shapes.warmup}",
        f"cudnn_benchmark: {json.dumps(shapes.cudnn_benchmark)}",
        "stages:",
    ]


def _check_same_shape(card: Card, entry: ShapeEntry, labels: tuple[str, str]) -> None:
    """UsageError when the shapes file's shape of a card's group id is not the one the card
    measured (a shapes file of another recording whose shapes are named alike): its
    alternatives would be built from the card's facts and timed on another op. The plain
    parameters both name (sizes, strides, dtype, flags) must agree."""
    from ..core.errors import UsageError

    written = entry.shape.written()
    for key, value in card.shape_parameters.items():
        theirs = written.get(key)
        if _plain(value) and _plain(theirs) and value != theirs:
            raise UsageError(
                f"{labels[1]}: {card.group}: its {key} is {theirs}, the card's {value}: the cards"
                " were not captured from this shapes file"
            )


def _plain(value: object) -> bool:
    """A scalar or a list of scalars (the parameters compared; nested tensor facts are not)."""
    scalars = (int, float, str, bool)
    return isinstance(value, scalars) or (
        isinstance(value, list) and all(isinstance(v, scalars) for v in value)
    )


def _ranked(cards: CardFile, stages: list[str]) -> list[tuple[Card, float | None]]:
    """Timed cards (of the stages named) by recoverable time at SOL per inference, then at
    their kernel roofs, then by group id."""
    rows: list[tuple[float, float, str, Card, float | None]] = []
    for card in cards.cards:
        room = card_headroom(card)
        if room is None or (stages and card.stage not in stages):
            continue
        sol = None if room.sol_headroom_us is None else room.sol_headroom_us * card.calls
        roof = (room.kernel_headroom_us or 0.0) * card.calls
        rows.append((-(sol or 0.0), -roof, card.group, card, sol))
    rows.sort(key=lambda r: r[:3])
    return [(r[3], r[4]) for r in rows]


def _planned(
    rank: int, card: Card, entry: ShapeEntry, found: list[Alternative],
    recoverable: float | None, by_stage: dict[str, list[str]],
) -> PlannedMove:  # fmt: skip
    """One move: its alternatives named `mNN.label` and appended to their stage's shapes."""
    tries = []
    for alt in found:
        name = f"m{rank:02d}.{alt.label}"
        shape = alt.shape.model_copy(update={"name": name, "calls": card.calls})
        by_stage.setdefault(entry.stage, []).append(json.dumps(shape.written()))
        tries.append(
            PlannedTry(group=f"{entry.stage}:{name}", label=alt.label, kind=alt.kind, why=alt.why)
        )
    room = card_headroom(card)
    return PlannedMove(
        rank=rank,
        stage=card.stage,
        group=card.group,
        op=card.op,
        calls=card.calls,
        measured_us=room.measured_us if room else 0.0,
        recoverable_at_sol_us=None if recoverable is None else round(recoverable, 3),
        tries=tries,
    )


def write_plan(folder: Path, plan: TryPlan, shapes_text: str) -> tuple[Path, Path]:
    """`plan.json` and `shapes.yaml` in the tries folder, each written whole or not at all."""
    from ..core.atomic import write_text_atomic

    folder.mkdir(parents=True, exist_ok=True)
    plan_path, shapes_path = folder / "plan.json", folder / "shapes.yaml"
    write_text_atomic(plan_path, plan.model_dump_json(indent=2) + "\n")
    write_text_atomic(shapes_path, shapes_text)
    return plan_path, shapes_path


def stage_shares(plan: TryPlan, cards: CardFile) -> list[str]:
    """Per stage, the share of its measured kernel time (per inference, the cards') that the
    moves tried hold, so that a user sees how much of the stage the experiment is about."""
    totals: dict[str, float] = {}
    for card in cards.cards:
        room = card_headroom(card)
        if room is not None:
            totals[card.stage] = totals.get(card.stage, 0.0) + room.measured_us * card.calls
    held: dict[str, float] = {}
    for move in plan.moves:
        if move.op not in ("chain", "fold"):  # their ops are cards of their own, counted there
            held[move.stage] = held.get(move.stage, 0.0) + move.measured_us * move.calls
    return [
        f"{stage}: the moves tried hold {us:,.1f} us of the stage's {totals[stage]:,.1f} us"
        " per inference"
        f" ({100 * us / totals[stage]:.1f} % of the cards' kernel time)"
        for stage, us in held.items()
        if totals.get(stage)
    ]
