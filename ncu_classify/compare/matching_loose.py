"""CardPair the cards of loose reports (a user's own ncu runs) by what they hold, for `diff`.

Cards of a report without a capture manifest are named after the report file
(`h100_run:qkv_linear` in stage `h100_run`), so the same program profiled as `h100_run.ncu-rep`
and `h200_run.ncu-rep` shares no group id. Such stages are paired one to one, most shared
names first (a stage of the same name always with its namesake), and within a pair of stages
the cards meet by NVTX range, then by the dominant kernel's function name, then by shape
parameters, in that order of trust. Capture cards (group ids) never take part.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..cards.model import Card
from ..cards.rollup import named_dominant
from ..read.names import report_stem

LooseBy = Literal["nvtx_range", "kernel", "shape"]
LOOSE_OPS = ("nvtx_range", "kernel")  # the ops classify gives cards of loose reports


@dataclass
class LooseResult:
    """Partners found (baseline index -> candidate index, how), the candidate stages compared
    with a baseline stage of another name, and a note per such pair of stages."""

    partner: dict[int, tuple[int, LooseBy]] = field(default_factory=dict)
    stages: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def loose_name(card: Card) -> str | None:
    """The NVTX range or kernel name of a card that classify made from a report without a
    manifest (its stage is the report's label), else None."""
    if card.op not in LOOSE_OPS or not card.group.startswith(card.stage + ":"):
        return None
    if not card.ncu_output or report_stem(card.ncu_output) != card.stage.rsplit("/", 1)[-1]:
        return None
    return card.group[len(card.stage) + 1 :]


def function_of(card: Card) -> str | None:
    """The function name of the card's dominant kernel (its name without template arguments)."""
    top = named_dominant(card)
    return (top.function_name if top else None) or card.dominant_kernel


def _range_key(card: Card) -> Any:
    return loose_name(card) if card.op == "nvtx_range" else None


def _kernel_key(card: Card) -> Any:
    function = function_of(card)
    return (card.op, function) if function else None


def _shape_key(card: Card, defining: Callable[[Card], dict[str, Any]]) -> Any:
    shape = defining(card)
    return (card.op, json.dumps(shape, sort_keys=True)) if shape else None


def pair_loose(
    baseline: list[Card],
    candidate: list[Card],
    free: tuple[set[int], set[int]],
    defining: Callable[[Card], dict[str, Any]],
) -> LooseResult:
    """Partners among the loose cards left unpaired (`free` indices of each side)."""
    result = LooseResult()
    sides = [_by_stage(baseline, free[0]), _by_stage(candidate, free[1])]
    tiers: list[tuple[LooseBy, Callable[[Card], Any]]] = [
        ("nvtx_range", _range_key),
        ("kernel", _kernel_key),
        ("shape", lambda c: _shape_key(c, defining)),
    ]
    for base_stage, cand_stage in _stage_pairs(baseline, candidate, *sides):
        found: dict[LooseBy, int] = {}
        taken: set[int] = set()
        for how, key in tiers:
            for i, j in _match(baseline, candidate, sides[0][base_stage], sides[1][cand_stage],
                               key, taken, result.partner):  # fmt: skip
                result.partner[i] = (j, how)
                taken.add(j)
                found[how] = found.get(how, 0) + 1
        if base_stage != cand_stage:
            result.stages[cand_stage] = base_stage
            counts = sides[0][base_stage], sides[1][cand_stage]
            result.notes.append(_note(base_stage, cand_stage, found, counts))
    return result


def _by_stage(cards: list[Card], free: set[int]) -> dict[str, list[int]]:
    stages: dict[str, list[int]] = {}
    for i in sorted(free):
        if loose_name(cards[i]) is not None:
            stages.setdefault(cards[i].stage, []).append(i)
    return stages


def _names(cards: list[Card], indices: list[int]) -> set[Any]:
    """What a stage's cards could be paired by: range names and kernel functions."""
    return {k for i in indices for k in (_range_key(cards[i]), _kernel_key(cards[i])) if k}


def _stage_pairs(
    baseline: list[Card],
    candidate: list[Card],
    base: dict[str, list[int]],
    cand: dict[str, list[int]],
) -> list[tuple[str, str]]:
    """Loose stages paired one to one: namesakes first, then the most shared names (ties in
    file order); stages that share nothing stay apart."""
    options = []
    for a, (bs, bi) in enumerate(base.items()):
        names = _names(baseline, bi)
        for b, (cs, ci) in enumerate(cand.items()):
            shared = len(names & _names(candidate, ci))
            if bs == cs or shared:
                options.append((bs != cs, -shared, a, b, bs, cs))
    chosen: list[tuple[str, str]] = []
    used: tuple[set[str], set[str]] = (set(), set())
    for *_, bs, cs in sorted(options):
        if bs not in used[0] and cs not in used[1]:
            chosen.append((bs, cs))
            used[0].add(bs)
            used[1].add(cs)
    return chosen


def _match(
    baseline: list[Card],
    candidate: list[Card],
    base: list[int],
    cand: list[int],
    key: Callable[[Card], Any],
    taken: set[int],
    partner: dict[int, Any],
) -> list[tuple[int, int]]:
    """Baseline and candidate cards with equal keys, each side in file order."""
    buckets: dict[Any, list[int]] = {}
    for j in cand:
        value = key(candidate[j])
        if j not in taken and value is not None:
            buckets.setdefault(value, []).append(j)
    pairs = []
    for i in base:
        value = key(baseline[i])
        if i in partner or value is None or not buckets.get(value):
            continue
        pairs.append((i, buckets[value].pop(0)))
    return pairs


def _note(
    base: str, cand: str, found: dict[LooseBy, int], counts: tuple[list[int], list[int]]
) -> str:
    how = {"nvtx_range": "by NVTX range", "kernel": "by kernel name", "shape": "by shape"}
    parts = ", ".join(f"{n} {how[k]}" for k, n in found.items() if n)
    return (
        f"loose reports of other names compared by what their cards hold: baseline stage"
        f" {base!r} with candidate stage {cand!r}: {sum(found.values())} of"
        f" {len(counts[0])} and {len(counts[1])} cards paired ({parts or 'none'})"
    )
