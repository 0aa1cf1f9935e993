"""How close a verdict is to another: the margin to the threshold that decided it, and the
nearest rule that would have fired instead; within the rules file's `borderline` margin the
verdict is flagged (the 96-channel VAE convs read l2_pct 58-61 % around the 60 % threshold,
and flip run to run).

Distances are in the deciding metric's own unit (percentage points, waves, a ratio). A true
`any` group is as far from flipping as its strongest true member, a true `all` group as its
weakest; a false `any` group is as near to holding as its nearest member, a false `all` group
as its farthest false member. Comparisons on missing metrics have no distance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cards.figures import Margin
from ..core.metrics import BOUNDED_BY
from .rules import OPERATORS, AllOf, AnyOf, Compare, RuleSet, from_bound

Distance = tuple[float, str] | None  # (how far, in the unit of which metric)


@dataclass(frozen=True)
class _Node:
    holds: bool | None
    distance: Distance


def _node(cond: Compare | AnyOf | AllOf, values: Mapping[str, float | None]) -> _Node:
    if isinstance(cond, Compare):
        value = values.get(cond.metric)
        if value is None or value != value:  # missing or NaN: maybe settled by its bound
            settled = from_bound(cond, values)
            bound = values.get(BOUNDED_BY.get(cond.metric, ""))
            if settled is None or bound is None:
                return _Node(None, None)
            return _Node(settled, (abs(bound - cond.value), BOUNDED_BY[cond.metric]))
        return _Node(OPERATORS[cond.op](value, cond.value), (abs(value - cond.value), cond.metric))
    members = [_node(c, values) for c in (cond.any if isinstance(cond, AnyOf) else cond.all)]
    true = [m for m in members if m.holds is True]
    false = [m for m in members if m.holds is False]
    if isinstance(cond, AnyOf):
        if true:
            return _Node(True, _pick(true, max))
        return _Node(None if len(false) < len(members) else False, _pick(false, min))
    if false:
        return _Node(False, _pick(false, max))
    return _Node(None if len(true) < len(members) else True, _pick(true, min))


def _pick(nodes: list[_Node], choose: Callable[..., Any]) -> Distance:
    known = [n.distance for n in nodes if n.distance is not None]
    return choose(known, key=lambda d: d[0]) if known else None


def verdict_margin(rules: RuleSet, fired: str, values: Mapping[str, float | None]) -> Margin:
    """The margin of the verdict `fired` (the first rule that held) and its nearest rival: an
    earlier rule close to holding, or the rule after it that would fire if it stopped holding."""
    scale = rules.borderline
    rival: tuple[float, str, Distance] | None = None
    margin: Distance = None
    for index, rule in enumerate(rules.rules):
        if rule.when == "always":
            break
        node = _node(rule.when, values)
        if rule.name == fired:
            margin = node.distance
            after = _next_firing(rules, index, values)
            if after and margin:
                rival = _closer(rival, (margin[0] / _scale(scale, margin[1]), after, margin))
            break
        if node.holds is False and node.distance:
            score = node.distance[0] / _scale(scale, node.distance[1])
            rival = _closer(rival, (score, rule.name, node.distance))
    own = margin[0] / _scale(scale, margin[1]) if margin else None
    return Margin(
        metric=margin[1] if margin else None,
        distance=_round(margin[0]) if margin else None,
        alternative=rival[1] if rival else None,
        alternative_metric=rival[2][1] if rival and rival[2] else None,
        alternative_distance=_round(rival[2][0]) if rival and rival[2] else None,
        borderline=(own is not None and own < 1) or (rival is not None and rival[0] < 1),
    )


def _next_firing(rules: RuleSet, index: int, values: Mapping[str, float | None]) -> str | None:
    for rule in rules.rules[index + 1 :]:
        if rule.when == "always" or _node(rule.when, values).holds:
            return rule.name
    return None


def _closer(
    best: tuple[float, str, Distance] | None, other: tuple[float, str, Distance]
) -> tuple[float, str, Distance]:
    return other if best is None or other[0] < best[0] else best


def _scale(scale: Mapping[str, float], metric: str) -> float:
    return scale.get(metric, scale.get("default", 2.0))


def _round(value: float) -> float:
    return float(f"{value:.6g}")
