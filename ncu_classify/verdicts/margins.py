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
`grid_under_one_wave`, a rule it can never meet). An earlier rule that could not be decided (a
metric it needs unmeasured: a light capture has no sm_pct) is the rival whatever the distances:
it might have fired instead, so the verdict's alternative is that rule and the
metric it lacked, with no distance: `rival_unchecked` (borderline stays the distances' word, as
diff reads it as noise).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from ..cards.figures import Margin
from ..core.metrics import EXACT_METRICS
from ..core.stats import six_figures
from ..core.trusted import trusted
from .rules import OPERATORS, AllOf, AnyOf, Compare, Rule, RuleSet, bound_deciding, holds

# A distance as conditions carry it: (its score in borderline units, how far, which metric).
Scored = tuple[float, float, str] | None

# A condition's outcome: (holds: True, False or None when unknown; its distance to flipping).
_Node = tuple[bool | None, Scored]
_UNKNOWN: _Node = (None, None)

Score = Callable[[str], Callable[[float], float]]  # a metric -> its distances' scorer
Node = Callable[[Mapping[str, float | None]], _Node]
_SIZE = operator.itemgetter(0, 1)  # compare scored distances by score, then size


def _compiled(cond: Compare | AnyOf | AllOf, score: Score) -> Node:
    """`cond` as a function of the values giving whether it holds and how far it is from
    flipping (built once per rules file: this runs for every condition of every kernel)."""
    if type(cond) is Compare:
        return _leaf(cond, score)
    is_any = type(cond) is AnyOf
    members = tuple(_compiled(c, score) for c in (cond.any if is_any else cond.all))  # type: ignore[union-attr]
    count = len(members)

    def group(values: Mapping[str, float | None]) -> _Node:
        true: list[Scored] = []
        false: list[Scored] = []
        for member in members:
            holds, distance = member(values)
            if holds is True:
                true.append(distance)
            elif holds is False:
                false.append(distance)
        if is_any:
            if true:
                return True, _pick(true, max)
            return (None if len(false) < count else False), _pick(false, min)
        if false:
            return False, _pick(false, max)
        return (None if len(true) < count else True), _pick(true, min)

    return group


def _leaf(cond: Compare, score: Score) -> Node:
    """A comparison: its distance in its metric's unit; a metric missing or NaN may be settled
    by a measured metric that bounds it (then the distance is that metric's)."""
    metric, threshold, compare = cond.metric, cond.value, OPERATORS[cond.op]
    unit = score(metric)

    def leaf(values: Mapping[str, float | None]) -> _Node:
        value = values.get(metric)
        if value is None or value != value:
            found = bound_deciding(cond, values)
            if found is None:
                return _UNKNOWN
            settled, bound_metric, bound = found
            size = abs(bound - threshold)
            return settled, (score(bound_metric)(size), size, bound_metric)
        size = abs(value - threshold)
        return compare(value, threshold), (unit(size), size, metric)

    return leaf


def _pick(distances: list[Scored], choose: Callable[..., Any]) -> Scored:
    """The member distance `choose` (min or max) picks, compared in borderline units; among
    exact (launch) distances, which all score infinite, by their size."""
    known = [d for d in distances if d is not None]
    if len(known) == 1:
        return known[0]
    return choose(known, key=_SIZE) if known else None


def verdict_margin(rules: RuleSet, fired: str, values: Mapping[str, float | None]) -> Margin:
    """The margin of the verdict `fired` (the first rule that held) and its nearest rival: an
    earlier rule close to holding, or the rule after it that would fire if it stopped holding."""
    conditions = _plan(rules)
    rival: tuple[float, str, Scored] | None = None
    margin: Scored = None
    undecided: Rule | None = None
    for index, (rule, condition) in enumerate(zip(rules.rules, conditions, strict=True)):
        if condition is None:  # `always`
            break
        holds, distance = condition(values)
        if holds is None and undecided is None:
            undecided = rule
        if rule.name == fired:
            margin = distance
            after = _next_firing(rules, conditions, index, values)
            if after and margin:
                rival = _closer(rival, (margin[0], after, margin))
            break
        if holds is False and distance:
            rival = _closer(rival, (distance[0], rule.name, distance))
    if undecided is not None and margin is not None:  # a rule with a condition fired after it
        return _undecided(undecided, margin, values)
    own = margin[0] if margin else None
    return trusted(  # every field given, each of its type
        Margin,
        metric=margin[2] if margin else None,
        distance=six_figures(margin[1]) if margin else None,
        alternative=rival[1] if rival else None,
        alternative_metric=rival[2][2] if rival and rival[2] else None,
        alternative_distance=six_figures(rival[2][1]) if rival and rival[2] else None,
        borderline=(own is not None and own < 1) or (rival is not None and rival[0] < 1),
        rival_unchecked=False,
    )


def _undecided(
    rule: Rule, margin: tuple[float, float, str], values: Mapping[str, float | None]
) -> Margin:
    """The margin of a verdict an earlier, undecided `rule` might have taken: that rule the
    alternative, the first metric it lacked named, no distance to it, `rival_unchecked`."""
    lacked: list[str] = []
    holds(rule.when, values, lacked)  # type: ignore[arg-type]  # `always` is never undecided
    return trusted(
        Margin,
        metric=margin[2],
        distance=six_figures(margin[1]),
        alternative=rule.name,
        alternative_metric=lacked[0] if lacked else None,
        alternative_distance=None,
        borderline=margin[0] < 1,
        rival_unchecked=True,
    )


_PLANS: dict[int, tuple[RuleSet, list[Node | None]]] = {}


def _plan(rules: RuleSet) -> list[Node | None]:
    """Each rule's compiled condition (None for `always`), kept per rules object (a run loads
    one or two; the object is kept with them, so that its id stays its)."""
    kept = _PLANS.get(id(rules))
    if kept is None or kept[0] is not rules:
        if len(_PLANS) > 64:
            _PLANS.clear()
        score = _scorer(rules.borderline)
        conditions = [
            None if isinstance(rule.when, str) else _compiled(rule.when, score)
            for rule in rules.rules
        ]
        kept = _PLANS[id(rules)] = (rules, conditions)
    return kept[1]


def _next_firing(
    rules: RuleSet, conditions: list[Node | None], index: int, values: Mapping[str, float | None]
) -> str | None:
    for rule, condition in zip(rules.rules[index + 1 :], conditions[index + 1 :], strict=True):
        if condition is None or condition(values)[0]:
            return rule.name
    return None


def _closer(
    best: tuple[float, str, Scored] | None, other: tuple[float, str, Scored]
) -> tuple[float, str, Scored]:
    return other if best is None or other[0] < best[0] else best


def _scorer(scale: Mapping[str, float]) -> Score:
    """Per metric, a distance in units of its borderline margin; infinite for a launch figure."""

    def scorer(metric: str) -> Callable[[float], float]:
        if metric in EXACT_METRICS:
            return lambda size: math.inf
        divisor = scale.get(metric, scale.get("default", 2.0))
        return lambda size: size / divisor

    return scorer
