"""How close a verdict is to another: the margin to the threshold that decided it, and the
nearest rule that would have fired instead; within the rules file's `borderline` margin the
verdict is flagged (the 96-channel VAE convs read l2_pct 58-61 % around the 60 % threshold,
and flip run to run).

Distances are in the deciding metric's own unit (percentage points, waves, a ratio), and are
compared across metrics in units of each metric's borderline margin. A true `any` group is as
far from flipping as its strongest true member, a true `all` group as its weakest; a false `any`
group is as near to holding as its nearest member, a false `all` group as its farthest false
member. Comparisons on missing metrics have no distance. Launch figures (waves, grid, the
persistent flag: `EXACT_METRICS`) cannot move between runs: their distances are reported but
never make a verdict borderline (a persistent GEMM at exactly 1.00 waves is 0 waves from
`grid_under_one_wave`, a rule it can never meet).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..cards.figures import Margin
from ..core.metrics import BOUNDED_BY, EXACT_METRICS
from ..core.trusted import trusted
from .rules import OPERATORS, AllOf, AnyOf, Compare, RuleSet, from_bound

Distance = tuple[float, str] | None  # (how far, in the unit of which metric)


# A condition's outcome: (holds: True, False or None when unknown; its distance to flipping).
_Node = tuple[bool | None, Distance]
_UNKNOWN: _Node = (None, None)

Score = Callable[[Distance], float]


Node = Callable[[Mapping[str, float | None]], _Node]


def _compiled(cond: Compare | AnyOf | AllOf, score: Score) -> Node:
    """`cond` as a function of the values giving whether it holds and how far it is from
    flipping (built once per rules file: this runs for every condition of every kernel)."""
    if type(cond) is Compare:
        return _leaf(cond)
    is_any = type(cond) is AnyOf
    members = tuple(_compiled(c, score) for c in (cond.any if is_any else cond.all))  # type: ignore[union-attr]
    count = len(members)

    def group(values: Mapping[str, float | None]) -> _Node:
        true: list[Distance] = []
        false: list[Distance] = []
        for member in members:
            holds, distance = member(values)
            if holds is True:
                true.append(distance)
            elif holds is False:
                false.append(distance)
        if is_any:
            if true:
                return True, _pick(true, max, score)
            return (None if len(false) < count else False), _pick(false, min, score)
        if false:
            return False, _pick(false, max, score)
        return (None if len(true) < count else True), _pick(true, min, score)

    return group


def _leaf(cond: Compare) -> Node:
    """A comparison: its distance in its metric's unit; a metric missing or NaN may be settled
    by the metric that bounds it (then the distance is that metric's)."""
    metric, threshold, compare = cond.metric, cond.value, OPERATORS[cond.op]
    bound_metric = BOUNDED_BY.get(metric, "")

    def leaf(values: Mapping[str, float | None]) -> _Node:
        value = values.get(metric)
        if value is None or value != value:
            settled = from_bound(cond, values)
            bound = values.get(bound_metric)
            if settled is None or bound is None:
                return _UNKNOWN
            return settled, (abs(bound - threshold), bound_metric)
        return compare(value, threshold), (abs(value - threshold), metric)

    return leaf


def _pick(distances: list[Distance], choose: Callable[..., Any], score: Score) -> Distance:
    """The member distance `choose` (min or max) picks, compared in borderline units; among
    exact (launch) distances, which all score infinite, by their size."""
    known = [d for d in distances if d is not None]
    if len(known) == 1:
        return known[0]
    return choose(known, key=lambda d: (score(d), d[0])) if known else None


def verdict_margin(rules: RuleSet, fired: str, values: Mapping[str, float | None]) -> Margin:
    """The margin of the verdict `fired` (the first rule that held) and its nearest rival: an
    earlier rule close to holding, or the rule after it that would fire if it stopped holding."""
    score, conditions = _plan(rules)
    rival: tuple[float, str, Distance] | None = None
    margin: Distance = None
    for index, (rule, condition) in enumerate(zip(rules.rules, conditions, strict=True)):
        if condition is None:  # `always`
            break
        holds, distance = condition(values)
        if rule.name == fired:
            margin = distance
            after = _next_firing(rules, conditions, index, values)
            if after and margin:
                rival = _closer(rival, (score(margin), after, margin))
            break
        if holds is False and distance:
            rival = _closer(rival, (score(distance), rule.name, distance))
    own = score(margin) if margin else None
    return trusted(  # every field given, each of its type
        Margin,
        metric=margin[1] if margin else None,
        distance=_round(margin[0]) if margin else None,
        alternative=rival[1] if rival else None,
        alternative_metric=rival[2][1] if rival and rival[2] else None,
        alternative_distance=_round(rival[2][0]) if rival and rival[2] else None,
        borderline=(own is not None and own < 1) or (rival is not None and rival[0] < 1),
    )


_PLANS: dict[int, tuple[RuleSet, Score, list[Node | None]]] = {}


def _plan(rules: RuleSet) -> tuple[Score, list[Node | None]]:
    """The scorer and each rule's compiled condition (None for `always`), kept per rules
    object (a run loads one or two; the object is kept with them, so that its id stays its)."""
    kept = _PLANS.get(id(rules))
    if kept is None or kept[0] is not rules:
        if len(_PLANS) > 64:
            _PLANS.clear()
        score = _scorer(rules.borderline)
        conditions = [
            None if isinstance(rule.when, str) else _compiled(rule.when, score)
            for rule in rules.rules
        ]
        kept = _PLANS[id(rules)] = (rules, score, conditions)
    return kept[1], kept[2]


def _next_firing(
    rules: RuleSet, conditions: list[Node | None], index: int, values: Mapping[str, float | None]
) -> str | None:
    for rule, condition in zip(rules.rules[index + 1 :], conditions[index + 1 :], strict=True):
        if condition is None or condition(values)[0]:
            return rule.name
    return None


def _closer(
    best: tuple[float, str, Distance] | None, other: tuple[float, str, Distance]
) -> tuple[float, str, Distance]:
    return other if best is None or other[0] < best[0] else best


def _scorer(scale: Mapping[str, float]) -> Score:
    """A distance in units of its metric's borderline margin; infinite for a launch figure."""

    def score(distance: Distance) -> float:
        if distance is None or distance[1] in EXACT_METRICS:
            return math.inf
        return distance[0] / scale.get(distance[1], scale.get("default", 2.0))

    return score


def _round(value: float) -> float:
    return float(f"{value:.6g}")
