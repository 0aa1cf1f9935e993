"""`next` with what `try` measured: each move that was tried carries its alternatives (kernels,
time per call with its interval, saving per inference with its interval, numerics, status) and
its winner; moves are ranked by the measured saving where there is one, by headroom otherwise
(each row says which); a line per stage gives the winners' total, and a program-wide move its
saving, beside the stage's measured time."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..tries.results import TriedAlternative, TriedMove, TryResults, numerics_text

RankedBy = Literal["measured", "headroom"]


class MeasuredAlternative(BaseModel):
    """One alternative as `try` measured it."""

    model_config = ConfigDict(extra="forbid")
    label: str
    kind: str
    status: str
    kernels: int = Field(description="kernels it ran per call")
    us_per_call: float | None
    us_per_call_ci95: tuple[float, float] | None
    saving_us: float | None = Field(description="per inference")
    saving_ci95_us: tuple[float, float] | None
    within_tolerance: bool | None = Field(
        description="numerics against the original; None: not compared"
    )
    numerics: str | None = Field(
        default=None,
        description="how its output compared: `rel err 0.0042 (ok bf16)`, `numerics not"
        " compared: <why>` (it cannot win), `numerics: not compared (padded shape)`",
    )


class MeasuredMove(BaseModel):
    """A move `try` measured: the original timed again, every alternative, the winner."""

    model_config = ConfigDict(extra="forbid")
    tries_file: str
    original_us_per_call: float | None
    alternatives: list[MeasuredAlternative]
    winner: str | None = Field(description="None: no alternative saves time within tolerance")
    saving_us: float | None = Field(description="the winner's saving per inference")
    saving_ci95_us: tuple[float, float] | None


class StageMeasured(BaseModel):
    """Per stage: what the measured moves save together, and any program-wide move."""

    model_config = ConfigDict(extra="forbid")
    stage: str
    moves_measured: int
    winners: int
    saving_us: float = Field(description="the winners' savings summed, per inference")
    saving_ci95_us: tuple[float, float] | None = Field(
        description="half-widths added in quadrature (the moves measured independently)"
    )
    programs: list[ProgramSaving] = Field(
        default_factory=list, description="each program-wide move measured for the stage"
    )
    folds_tried: int = Field(default=0, description="pads folded into their convs, tried")
    folds_won: int = 0
    folds_saving_us: float = Field(default=0.0, description="the pad folds that won")
    chains_tried: int = Field(default=0, description="fusion moves: the chains tried")
    chains_won: int = 0
    chains_saving_us: float = Field(default=0.0, description="the fused chains that won")
    chains_all_us: float = Field(
        default=0.0,
        description="every chain compiled, losers too (what compiling the whole stage does to"
        " them): the compiled alternatives' savings summed",
    )
    chains_failed: int = Field(default=0, description="chains whose compiled run failed")
    overlap_us: float = Field(
        default=0.0,
        description="per-op winners' savings whose ops are inside the winning chains or folds"
        " (they save them too: count them once); a fold's pad across tries files included",
    )


class ProgramSaving(BaseModel):
    """A program-wide move's saving for one stage (us per inference)."""

    model_config = ConfigDict(extra="forbid")
    move: str
    saving_us: float
    saving_ci95_us: tuple[float, float] | None


def measured_move(move: TriedMove, label: str) -> MeasuredMove:
    """A tried move as `next` shows it."""
    best = next((a for a in move.alternatives if a.label == move.winner), None)
    return MeasuredMove(
        tries_file=label,
        original_us_per_call=move.original.time.mean_us if move.original.time else None,
        alternatives=[_alternative(a) for a in move.alternatives],
        winner=move.winner,
        saving_us=move.measured_saving_us,
        saving_ci95_us=best.saving_ci95_us if best else None,
    )


def _alternative(alt: TriedAlternative) -> MeasuredAlternative:
    """An alternative as `next` shows it: its time, saving and how its output compared."""
    time = alt.time
    interval = None
    if time is not None and time.ci95_low_us is not None and time.ci95_high_us is not None:
        interval = (time.ci95_low_us, time.ci95_high_us)
    numerics = alt.numerics
    return MeasuredAlternative(
        label=alt.label,
        kind=alt.kind,
        status=alt.status,
        kernels=len(alt.kernels),
        us_per_call=time.mean_us if time else None,
        us_per_call_ci95=interval,
        saving_us=alt.saving_us,
        saving_ci95_us=alt.saving_ci95_us,
        within_tolerance=numerics.within if numerics and numerics.compared else None,
        numerics=numerics_text(alt) if numerics else None,
    )


def stage_measured(
    stage: str, moves: list[MeasuredMove], results: list[TryResults]
) -> StageMeasured:
    """The winners' total for a stage, each program-wide move measured for it, the chains
    fused and the pads folded (fusion and fold moves are no card's: they are counted here)."""
    won = [m for m in moves if m.saving_us is not None]
    total = round(sum(m.saving_us or 0.0 for m in won), 3)
    halves = [(m.saving_ci95_us[1] - m.saving_ci95_us[0]) / 2 for m in won if m.saving_ci95_us]
    interval = None
    if won and len(halves) == len(won):
        half = math.sqrt(sum(h * h for h in halves))
        interval = (round(total - half, 3), round(total + half, 3))
    found = StageMeasured(
        stage=stage, moves_measured=len(moves), winners=len(won), saving_us=total,
        saving_ci95_us=interval,
    )  # fmt: skip
    kept = _latest_no_cards(stage, results)
    for number, result in enumerate(results):
        program = result.program
        for s in program.stages if program else []:
            if s.stage == stage and program is not None:
                found.programs.append(ProgramSaving(
                    move=program.move, saving_us=s.saving_us, saving_ci95_us=s.saving_ci95_us
                ))  # fmt: skip
        folds = [m for m in result.moves if kept.get((m.op, m.group)) == number and m.op == "fold"]
        found.folds_tried += len(folds)
        found.folds_won += sum(1 for m in folds if m.winner)
        found.folds_saving_us += round(sum(m.measured_saving_us or 0.0 for m in folds), 3)
        fused = [m for m in result.moves if kept.get((m.op, m.group)) == number and m.op == "chain"]
        if any(m.winner for m in [*folds, *fused]):  # its overlap: with its own winning chains
            found.overlap_us = round(found.overlap_us + result.overlap_us.get(stage, 0.0), 3)
        found.chains_tried += len(fused)
        found.chains_won += sum(1 for m in fused if m.winner)
        found.chains_saving_us += round(sum(m.measured_saving_us or 0.0 for m in fused), 3)
        compiled = [a for m in fused for a in m.alternatives if a.kind != "baseline"]
        found.chains_all_us += round(sum(a.saving_us or 0.0 for a in compiled), 3)
        found.chains_failed += sum(1 for a in compiled if a.saving_us is None)
    found.overlap_us = round(found.overlap_us + _pads_folded_elsewhere(stage, results, kept), 3)
    return found


def _latest_no_cards(stage: str, results: list[TryResults]) -> dict[tuple[str, str], int]:
    """The stage's chain and fold moves (no cards), each counted once: the one of the last
    tries file that measured it, as a card's move measured twice is shown from the last."""
    return {
        (m.op, m.group): number
        for number, result in enumerate(results)
        for m in result.moves
        if m.stage == stage and m.op in ("chain", "fold")
    }


def _pads_folded_elsewhere(
    stage: str, results: list[TryResults], kept: dict[tuple[str, str], int]
) -> float:
    """The per-op savings of pads that a winning fold of another tries file removes (the
    fold's group names its pad; within one file `try` counted them once already)."""
    ops = {m.group: (n, m) for n, r in enumerate(results) for m in r.moves if m.stage == stage}
    inside = 0.0
    for (op, group), number in kept.items():
        fold = next(m for m in results[number].moves if (m.op, m.group) == (op, group))
        pad = f"{stage}:{group.split(':fold:', 1)[-1]}"
        if op != "fold" or not fold.winner or pad not in ops or ops[pad][0] == number:
            continue
        move = ops[pad][1]
        if move.op != "fold" and move.winner and move.measured_saving_us and move.calls:
            share = min(fold.calls, move.calls) / move.calls
            inside += move.measured_saving_us * share
    return inside


def measured_text(m: MeasuredMove) -> str:
    """One line: the winner and its saving, then every other alternative's."""
    parts = []
    if m.winner is not None and m.saving_us is not None:
        won = next((a for a in m.alternatives if a.label == m.winner), None)
        uncompared = won is not None and "not compared" in (won.numerics or "")
        note = f" ({won.numerics})" if won is not None and uncompared else ""
        parts.append(
            f"measured: {m.winner} saves {m.saving_us:,.1f} us{_ci(m.saving_ci95_us)}{note}"
        )
    else:
        parts.append("measured: no alternative saves time")
    for a in m.alternatives:
        if a.label == m.winner:
            continue
        if a.saving_us is None:
            parts.append(f"{a.label} {a.status}")
        else:
            flag = "" if a.within_tolerance is not False else " (beyond tolerance)"
            if a.numerics and "not compared" in a.numerics:
                flag = f" ({a.numerics})"
            parts.append(f"{a.label} {a.saving_us:,.1f}{flag}")
    return "; ".join(parts)


def _ci(interval: tuple[float, float] | None) -> str:
    return f" [{interval[0]:,.1f}, {interval[1]:,.1f}]" if interval else ""


def stage_line(s: StageMeasured, measured_us: float) -> str:
    """`vae: measured: 9 of 10 moves tried win 115,204.4 us [...] of 306,613.7 us per
    inference; program-wide bf16: ...; fusion: 4 of 6 chains fused win ...; pad folds: ...`."""
    parts = [f"program-wide {p.move}: {p.saving_us:,.1f} us{_ci(p.saving_ci95_us)}"
             for p in s.programs]  # fmt: skip
    if s.chains_tried:
        failed = f", {s.chains_failed} not compiled" if s.chains_failed else ""
        parts.append(
            f"fusion: {s.chains_won} of {s.chains_tried} chains fused win"
            f" {s.chains_saving_us:,.1f} us (all {s.chains_tried} compiled:"
            f" {s.chains_all_us:,.1f} us{failed})"
        )
    if s.overlap_us:
        inside = "inside the winning chains or folds too"
        parts.append(f"{s.overlap_us:,.1f} us of the moves' savings are {inside}")
    if s.moves_measured:
        won = f"{s.winners} of {s.moves_measured} moves tried win {s.saving_us:,.1f} us"
        parts.insert(0, won + _ci(s.saving_ci95_us))
    if s.folds_tried:
        parts.append(
            f"pad folds: {s.folds_won} of {s.folds_tried} pads folded into their convs win"
            f" {s.folds_saving_us:,.1f} us"
        )
    whole = f" of {measured_us:,.1f} us per inference"
    return f"{s.stage}: measured: " + "; ".join([parts[0] + whole, *parts[1:]])


TRIES_COLUMNS = [
    "rank", "stage", "group", "op", "calls", "label", "kind", "status", "kernels", "primary",
    "us_per_call", "us_per_call_ci95_low", "us_per_call_ci95_high", "saving_us_per_inference",
    "saving_ci95_low", "saving_ci95_high", "max_rel_error", "tolerance_of", "within_tolerance",
    "winner", "not_eligible",
]  # fmt: skip


def tries_rows(results: TryResults) -> list[list[object]]:
    """One row per alternative of every move (the original first), for a DataFrame or CSV."""
    rows: list[list[object]] = []
    for move in results.moves:
        for alt in [move.original, *move.alternatives]:
            time, numerics = alt.time, alt.numerics
            saving = alt.saving_ci95_us or (None, None)
            compared = numerics is not None and numerics.compared
            rows.append([
                move.rank, move.stage, move.group, move.op, move.calls, alt.label, alt.kind,
                alt.status, len(alt.kernels), alt.primary,
                time.mean_us if time else None, time.ci95_low_us if time else None,
                time.ci95_high_us if time else None, alt.saving_us, *saving,
                numerics.max_rel_error if compared and numerics else None,
                numerics.tolerance_of if compared and numerics else None,
                numerics.within if compared and numerics else None,
                alt.label == move.winner, alt.not_eligible,
            ])  # fmt: skip
    return rows


def tries_notes(
    calls: dict[str, int], label: str, stages: set[str], tries: list[tuple[str, TryResults]]
) -> list[str]:
    """What `next --tries` cannot show as measured, a line each: the moves of a tries file
    that name no card of the cards file (`calls`: its cards' calls by group; another
    recording, chains of device ops), a card, chain or fold measured in two tries files (the
    last one named is shown, or counted in the stage line), and a move measured with other
    calls than the card's (its saving per inference is the other program's). Moves of stages
    left out are no news."""
    notes = []
    seen: dict[str, str] = {}
    for name, result in tries:
        moves = [m for m in result.moves if not stages or m.stage in stages]
        lost = [m for m in moves if m.group not in calls]
        if lost:
            chains = sum(1 for m in lost if m.op == "chain")
            folds = sum(1 for m in lost if m.op == "fold")
            kinds = [f"{chains} of them chains of device ops"] if chains else []
            kinds += [f"{folds} of them pad folds"] if folds else []
            what = f" ({', '.join(kinds)}, which are no cards)" if kinds else ""
            notes.append(
                f"{name}: {len(lost)} of its {len(moves)} moves name no card of {label}{what}:"
                " not shown"
            )
        again: dict[str, int] = {}  # chains and folds measured in an earlier file, per file
        for m in (m for m in moves if m.group in calls or m.op in ("chain", "fold")):
            if m.group in seen and m.group not in calls:
                again[seen[m.group]] = again.get(seen[m.group], 0) + 1
            elif m.group in seen:
                notes.append(f"{m.group}: measured in {seen[m.group]} and {name}: {name}'s shown")
            if m.group not in calls:  # a chain or fold: no card's calls to set against
                seen[m.group] = name
                continue
            if m.calls != calls[m.group]:
                notes.append(
                    f"{m.group}: {name} measured it at {m.calls} calls per inference, {label}"
                    f" has {calls[m.group]}: its savings are per inference of the other"
                )
            seen[m.group] = name
        notes += [
            f"{name}: {count} of its chains and folds were measured in {earlier} too: {name}'s"
            " counted in the stage line"
            for earlier, count in again.items()
        ]
    return notes
