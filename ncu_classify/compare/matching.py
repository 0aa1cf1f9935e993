"""CardPair the cards of two files by shape, for `diff`.

Three passes, each over the cards the earlier ones left: the same group id; then the same stage
and op with compatible shape parameters (every shape-defining key both cards hold is equal, and
they share at least one), so that legacy cards (`dit:aten.linear.default:{'M': ...}`), another
naming and ours meet, and a bf16 card meets its fp32 twin when the settings differ between the
files; last, cards of one stage and op that carry no shape at all (the legacy casts) in file
order. Among compatible candidates the one that agrees on the most parameters wins, the first
in file order on a tie. A card left over whose shape was already paired on its own side is a
repeat (the legacy file lists one DiT linear twice), not a removal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..cards.model import Card
from ..core.ordering import stage_order
from .matching_loose import loose_name, pair_loose

MatchedBy = Literal["group", "shape", "nvtx_range", "kernel", "position"]
# Parameters that choose how a shape runs, not which shape it is: they may differ between the
# two sides of a comparison (bf16 against fp32, TF32 on and off, another attention backend).
SETTINGS = frozenset(
    {
        "dtype",
        "allow_tf32",
        "memory_format",
        "bias",
        "backend",
        "backend_used",
        "substitutes_for",
        "from",
        "to",
        "note",
        "text",
    }
)
# Derived from the others (conv output) or bookkeeping: never decides a match.
IGNORED = frozenset({"output"})


@dataclass(frozen=True)
class CardPair:
    """One row of a comparison: a card on each side, or on one side only."""

    baseline: Card | None
    candidate: Card | None
    matched_by: MatchedBy | None = None
    repeat: bool = False  # an extra card of a shape already paired on its side


def defining_parameters(card: Card) -> dict[str, Any]:
    """The shape-defining parameters of a card (settings and derived keys left out)."""
    return {k: v for k, v in card.shape_parameters.items() if k not in SETTINGS | IGNORED}


def same_shape(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Whether two shapes' parameters can be the same shape: their shape-defining ones (settings
    and derived keys left out) that both have agree, and they have one at least."""
    shape_a, shape_b = (
        {k: v for k, v in params.items() if k not in SETTINGS | IGNORED} for params in (a, b)
    )
    shared = set(shape_a) & set(shape_b)
    return bool(shared) and all(_canon(shape_a[k]) == _canon(shape_b[k]) for k in shared)


def _compatible(a: Card, b: Card) -> int | None:
    """How many parameters two cards agree on, if they can be the same shape; None if not."""
    if (a.stage, a.op) != (b.stage, b.op) or not same_shape(a.shape_parameters, b.shape_parameters):
        return None
    params_a, params_b = a.shape_parameters, b.shape_parameters
    return sum(_canon(params_a[k]) == _canon(params_b[k]) for k in set(params_a) & set(params_b))


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@dataclass
class Pairing:
    """The pairs of two files, the candidate stages compared with a baseline stage of another
    name (loose reports of other names), and notes on how they were paired."""

    pairs: list[CardPair]
    stages: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def pair_cards(baseline: list[Card], candidate: list[Card]) -> list[CardPair]:
    """The pairs of `pair_files`."""
    return pair_files(baseline, candidate).pairs


def pair_files(baseline: list[Card], candidate: list[Card]) -> Pairing:
    """Every card of both files in exactly one pair, baseline order first, then the
    candidate's cards that found no partner, in their order. Candidates are looked up in
    buckets (group; exact shape; stage and op), so large files pair in near-linear time.
    Cards of loose reports left over meet by content (`matching_loose`)."""
    partner: dict[int, tuple[int, MatchedBy]] = {}
    taken: set[int] = set()

    def match(
        how: MatchedBy, key: Callable[[Card], Any], score: Callable[[Card, Card], int | None]
    ) -> None:
        buckets: dict[Any, list[int]] = {}
        for j, other in enumerate(candidate):
            if j not in taken:
                buckets.setdefault(key(other), []).append(j)
        for i, card in enumerate(baseline):
            if i in partner:
                continue
            best: tuple[int, int] | None = None
            for j in buckets.get(key(card), ()):
                if j in taken or (value := score(card, candidate[j])) is None:
                    continue
                if best is None or value > best[0]:
                    best = (value, j)
            if best is not None:
                partner[i] = (best[1], how)
                taken.add(best[1])

    match("group", lambda c: c.group, lambda a, b: 0)
    match("shape", lambda c: (c.stage, c.op, _canon(defining_parameters(c))), _compatible)
    match("shape", lambda c: (c.stage, c.op), _compatible)
    free = set(range(len(baseline))) - set(partner), set(range(len(candidate))) - taken
    loose = pair_loose(baseline, candidate, free, defining_parameters)
    partner.update(loose.partner)
    taken.update(j for j, _ in loose.partner.values())
    match("position", lambda c: (c.stage, c.op), _shapeless)
    paired_base = {_identity(baseline[i]) for i in partner}
    paired_cand = {_identity(candidate[j]) for j in taken}
    pairs = [
        CardPair(card, candidate[partner[i][0]], partner[i][1])
        if i in partner
        else CardPair(card, None, repeat=_identity(card) in paired_base)
        for i, card in enumerate(baseline)
    ]
    pairs += [
        CardPair(None, card, repeat=_identity(card) in paired_cand)
        for j, card in enumerate(candidate)
        if j not in taken
    ]
    return Pairing(pairs, loose.stages, loose.notes)


def _shapeless(a: Card, b: Card) -> int | None:
    """Cards of one stage and op pair in file order when one of them has no shape to compare
    (the legacy casts carry `{}`)."""
    same = (a.stage, a.op) == (b.stage, b.op) and not (loose_name(a) or loose_name(b))
    return 0 if same and (not defining_parameters(a) or not defining_parameters(b)) else None


def _identity(card: Card) -> tuple[str, str]:
    """A card's group and parameters: two cards alike in both are copies of one shape."""
    return card.group, _canon(card.shape_parameters)


def compared_stage(pair: CardPair, aliases: dict[str, str]) -> str:
    """The stage a pair is shown under: the baseline's; a candidate-only card's own, or the
    baseline stage its loose stage was compared with."""
    if pair.baseline is not None:
        return pair.baseline.stage
    assert pair.candidate is not None
    return aliases.get(pair.candidate.stage, pair.candidate.stage)


def by_stage_order(pairs: list[CardPair], aliases: dict[str, str] | None = None) -> list[CardPair]:
    """Pairs grouped by stage (stages in `stage_order`: first-seen, numbered ones in numeric
    order), file order within a stage."""
    stages: dict[str, list[CardPair]] = {}
    for pair in pairs:
        stages.setdefault(compared_stage(pair, aliases or {}), []).append(pair)
    return [pair for stage in stage_order(stages) for pair in stages[stage]]


def shortfall(pairs: list[CardPair]) -> list[str]:
    """A warning when nothing, or under half of the smaller file, paired, saying why."""
    base = [p.baseline for p in pairs if p.baseline is not None and not p.repeat]
    cand = [p.candidate for p in pairs if p.candidate is not None and not p.repeat]
    paired = sum(p.baseline is not None and p.candidate is not None for p in pairs)
    if not base or not cand or paired * 2 >= min(len(base), len(cand)):
        return []
    loose = [any(loose_name(c) for c in side) for side in (base, cand)]
    if loose[0] != loose[1]:
        why = (
            f"the {'baseline' if loose[0] else 'candidate'}'s cards come from reports without a"
            " capture manifest (stages named after the report files), the other's from a"
            " capture (group ids): classify both sides from the same kind of input"
        )
    elif loose[0]:
        why = "their NVTX ranges, kernel names and shapes differ"
    else:
        why = "no group id or shape is common to both sides"
    stages = [", ".join(dict.fromkeys(c.stage for c in side)) for side in (base, cand)]
    return [
        f"{'nothing' if not paired else f'only {paired} of the shapes'} paired"
        f" ({len(base)} baseline and {len(cand)} candidate cards; baseline stages {stages[0]},"
        f" candidate stages {stages[1]}): {why}"
    ]


def same_kernel(a: str, b: str) -> bool:
    """Whether two kernel names are one kernel, as far as both names tell: equal; or one cut
    short of the other (the legacy pipeline truncated names); or the same unqualified function
    when either name lost its template arguments (legacy `void cutlass::Kernel2(Params)`, or
    `void device_kernel, cute::C<1>` where its template stripping ate the middle)."""
    if a == b:
        return True
    shorter, longer = sorted((a, b), key=len)
    if len(shorter) >= 40 and longer.startswith(shorter):
        return True
    (func_a, templated_a), (func_b, templated_b) = _function(a), _function(b)
    return func_a == func_b and not (templated_a and templated_b)


def _function(name: str) -> tuple[str, bool]:
    """The unqualified function name (`at::native::foo<...>(...)` -> `foo`) and whether its
    template arguments follow it."""
    match = re.match(r"\s*(?:void\s+)?([A-Za-z_][\w:]*)", name)
    if not match:
        return name, False
    return match.group(1).rsplit("::", 1)[-1], name[match.end() : match.end() + 1] == "<"
