"""Why two kernels got different verdicts: the first rule whose truth differs between them, and
the comparisons in it that changed sides of their threshold (each with both values)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..core.noise import Noise
from ..verdicts.rules import AllOf, AnyOf, Compare, RuleSet, holds
from .model import Crossing

Values = Mapping[str, float | None]


def crossings(rules: RuleSet, baseline: Values, candidate: Values, noise: Noise) -> list[Crossing]:
    """The comparisons of the first rule (in order) that holds on one side and not on the
    other: the rule that decided the earlier of the two verdicts. Its comparisons whose answers
    differ are returned; [] if no rule holds on one side only. A rule that is unknown on one
    side and false on the other decided neither verdict and is passed over; a metric missing
    on both sides is left out (its answer moved only with the metric that bounds it)."""
    for rule in rules.rules:
        if isinstance(rule.when, str):
            return []
        if (holds(rule.when, baseline, []) is True) == (holds(rule.when, candidate, []) is True):
            continue
        return [
            _crossing(rule.name, leaf, baseline, candidate, noise)
            for leaf in _leaves(rule.when)
            if holds(leaf, baseline, []) != holds(leaf, candidate, [])
            and (baseline.get(leaf.metric) is not None or candidate.get(leaf.metric) is not None)
        ]
    return []


def _leaves(cond: Compare | AnyOf | AllOf) -> Iterator[Compare]:
    if isinstance(cond, Compare):
        yield cond
        return
    for member in cond.any if isinstance(cond, AnyOf) else cond.all:
        yield from _leaves(member)


def _crossing(rule: str, leaf: Compare, base: Values, cand: Values, noise: Noise) -> Crossing:
    before, after = base.get(leaf.metric), cand.get(leaf.metric)
    small = None
    if before is not None and after is not None:
        small = abs(after - before) <= noise.of(leaf.metric)
    return Crossing(
        rule=rule,
        metric=leaf.metric,
        op=leaf.op,
        threshold=leaf.value,
        baseline=before,
        candidate=after,
        within_noise=small,
    )
