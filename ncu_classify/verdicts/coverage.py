"""The cards of a recorded program set against the program: per stage, the program's kernel time
(or calls) from the recording's totals, the part whose shapes have cards, the cards' own
replayed time, and what no card covers (work the recording could not turn into a shape, shapes
whose capture failed, shapes `capture --coverage` left below its target, shapes not in this
capture), largest first.

Captures of one shapes file (the shards of a job array) are reckoned together. A capture read
in part (some of its reports given as files, `parts`) counts its own shapes alone, and only the
stages they belong to: the rest of the program is not claimed, nor listed as missing."""

from __future__ import annotations

from collections.abc import Collection

from ..capture.manifest import BelowTarget, Manifest
from ..cards.coverage import BELOW_TARGET_WHY, StageCoverage, UncoveredWork
from ..cards.fidelity import has_kernels
from ..cards.model import Card
from ..shapes.recorded import RecordedTotals
from .inputs import ReportSet

# Work of a stage unaccounted for below this share is rounding, not missing shapes.
REMAINDER_SHARE = 0.001


def set_coverage(per_set: list[tuple[ReportSet, list[Card]]]) -> list[StageCoverage]:
    """Coverage of the recorded programs of the report sets' captures (a drill-down is no
    program): a capture read in part stands for the shapes its reports hold, those its cards
    were made for (`parts.own_shapes`), as a manifest of those shapes alone."""
    captures, in_part = [], set()
    for given, cards in per_set:
        if given.manifest is None or given.manifest.drill_down:
            continue
        manifest = given.manifest
        if given.part:
            groups = {card.group for card in cards}
            shapes = [shape for shape in manifest.shapes if shape.group in groups]
            manifest = manifest.model_copy(update={"shapes": shapes})
            in_part.add(manifest.shapes_sha256)
        captures.append((manifest, cards))
    return program_coverage(captures, in_part)


def program_coverage(
    captures: list[tuple[Manifest, list[Card]]], in_part: Collection[str] = ()
) -> list[StageCoverage]:
    """Coverage of every recorded program among the captures (one per shapes file), stages in
    the order the recording lists them. Each capture's cards are its manifest's shapes, in
    order, then cards of kernels its reports hold beyond them (not counted here). A shapes file
    in `in_part` (of a capture read in part) has the stages of its cards alone."""
    by_file: dict[str, tuple[RecordedTotals, dict[str, Card], dict[str, BelowTarget]]] = {}
    for manifest, cards in captures:
        if manifest.recorded_totals is None:
            continue
        _, known, below = by_file.setdefault(
            manifest.shapes_sha256, (manifest.recorded_totals, {}, {})
        )
        for card in cards[: len(manifest.shapes)]:  # its shapes' cards (leftovers follow)
            old = known.get(card.group)  # a shape in two captures: the one that measured it
            if old is None or (not has_kernels(old) and has_kernels(card)):
                known[card.group] = card
        below.update({shape.group: shape for shape in manifest.below_target})
    return [
        stage_coverage(
            stage,
            totals,
            [c for c in cards.values() if c.stage == stage],
            [b for g, b in below.items() if b.stage == stage and g not in cards],
            sha256 in in_part,
        )
        for sha256, (totals, cards, below) in by_file.items()
        for stage in totals.stages
        if sha256 not in in_part or any(c.stage == stage for c in cards.values())
    ]


def stage_coverage(
    stage: str,
    totals: RecordedTotals,
    cards: list[Card],
    below: list[BelowTarget] | None = None,
    in_part: bool = False,
) -> StageCoverage:
    """One stage: what its cards stand for and what they do not (`in_part`: of a capture read
    in part, whose other shapes are in reports not given)."""
    timed = totals.basis == "kernel_time"
    whole = totals.stages[stage]
    covered = [card for card in cards if has_kernels(card)]
    uncovered = [
        UncoveredWork(
            name=u.name,
            why=u.why,
            calls=u.calls,
            real_us=u.kernel_us if timed else None,
        )
        for u in totals.uncovered
        if u.stage == stage
    ]
    uncovered += [failed_shape(card, timed) for card in cards if not has_kernels(card)]
    uncovered += below_target_work(below or [], timed)
    covered_us = sum((c.real_us or 0) * recorded_calls(c) for c in covered) if timed else None
    covered_calls = sum(recorded_calls(c) for c in covered)
    amount = whole.kernel_us if timed else whole.calls
    rest = remainder(amount, covered_us, covered_calls, uncovered, timed, whole.calls)
    uncovered += [_not_given(u) for u in rest] if in_part else rest
    uncovered.sort(key=lambda u: (-(u.real_us or 0), -u.calls, u.name))
    part = covered_us if timed else covered_calls
    light = [card for card in covered if card.captured_light]
    light_us = sum((c.real_us or 0) * recorded_calls(c) for c in light) if timed and light else None
    pct = min(100.0, 100 * part / amount) if amount and part is not None else None
    return StageCoverage(
        stage=stage,
        basis=totals.basis,
        coverage_pct=round(pct, 2) if pct is not None else None,
        real_us=whole.kernel_us if timed else None,
        covered_real_us=round(covered_us, 3) if covered_us is not None else None,
        replayed_us=replayed(covered),
        calls=whole.calls,
        covered_calls=covered_calls,
        uncovered=uncovered,
        light_shapes=len(light),
        light_real_us=round(light_us, 3) if light_us is not None else None,
    )


def recorded_calls(card: Card) -> int:
    """The calls the recording saw of a card's shape (its `calls` may have been edited)."""
    return card.real_calls or card.calls


def failed_shape(card: Card, timed: bool) -> UncoveredWork:
    """A shape of the recording whose card holds no measurement, with the program's time."""
    why = card.error or f"its card is {card.status}"
    time = card.real_us * recorded_calls(card) if timed and card.real_us is not None else None
    calls = recorded_calls(card)
    return UncoveredWork(name=card.group, why=f"no card: {why}", calls=calls, real_us=time)


def below_target_work(below: list[BelowTarget], timed: bool) -> list[UncoveredWork]:
    """The shapes a capture left below its coverage target, as one item of the stage."""
    if not below:
        return []
    calls = sum(b.real_calls or b.calls for b in below)
    time = sum((b.real_us or 0) * (b.real_calls or b.calls) for b in below) if timed else None
    return [
        UncoveredWork(
            name=f"({len(below)} shape{'s' if len(below) != 1 else ''} below the coverage target)",
            why=BELOW_TARGET_WHY,
            calls=calls,
            real_us=round(time, 3) if time is not None else None,
            groups=[b.group for b in below],
        )
    ]


def remainder(
    whole: float | None,
    covered_us: float | None,
    covered_calls: int,
    uncovered: list[UncoveredWork],
    timed: bool,
    stage_calls: int,
) -> list[UncoveredWork]:
    """The stage's work that neither a card nor a listed item accounts for: shapes of the
    recording that are not in these captures (other shards, or removed from the file), with
    their calls (the stage's recorded calls less those accounted for: a timed recording's
    said 0 calls)."""
    if not whole:
        return []
    calls = int(stage_calls - covered_calls - sum(u.calls for u in uncovered))
    if timed:
        rest = whole - (covered_us or 0) - sum(u.real_us or 0 for u in uncovered)
    else:
        rest = float(calls)
    if rest <= REMAINDER_SHARE * whole:
        return []
    return [
        UncoveredWork(
            name="(shapes not in these captures)",
            why="in the recording but not captured here: another shard, or removed from the"
            " shapes file",
            calls=max(calls, 0),
            real_us=round(rest, 3) if timed else None,
        )
    ]


def _not_given(rest: UncoveredWork) -> UncoveredWork:
    """The remainder of a stage of a capture read in part: mostly its shapes in reports of the
    capture that were not given."""
    why = (
        "in the recording but not among the reports read: in reports of the capture not given"
        " (classify its folder for them), another shard, or removed from the shapes file"
    )
    return rest.model_copy(update={"name": "(shapes not in the reports read)", "why": why})


def replayed(cards: list[Card]) -> float | None:
    """The cards' summed kernel time x calls (None when a card has no summed time)."""
    times = [c.summed_kernel_us for c in cards]
    if any(t is None for t in times):
        return None
    return round(sum((c.summed_kernel_us or 0) * recorded_calls(c) for c in cards), 3)
