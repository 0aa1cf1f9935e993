"""Threshold rules kept as data: a pydantic-validated YAML file, evaluated in order without eval.

A rule's `when` is a tree of `any` / `all` groups over leaf comparisons `{metric, op, value}`.
Missing metrics: evaluation is three-valued. A comparison on a metric that is absent or NaN is
unknown; `any` holds if one member holds, `all` fails if one member fails, otherwise the group is
unknown. A rule whose condition is unknown does not fire, the next rule is tried, and the verdict
lists the metrics it could not check under `unchecked_metrics`: a missing value is visible and
can never pass as a silent 0, nor let a rule fire on half its evidence. First matching rule wins;
the last rule must be `when: always` so that every kernel gets a class.
"""

from __future__ import annotations

import hashlib
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ..core.cache import cached, keep
from ..core.errors import RulesError
from ..core.metrics import AT_MOST, RULE_METRICS
from ..core.textio import read_text
from ..core.yamlio import validate_yaml

DEFAULT_RULES = Path(__file__).resolve().parent.parent / "data" / "default_rules.yaml"
MAX_RULES_BYTES = 256 << 10  # some 2,000 rules, read in about 3 s
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


class Compare(BaseModel):
    """Leaf: `metric op value`, e.g. `sm_pct >= 60`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    metric: str
    op: Literal[">=", ">", "<=", "<", "==", "!="]
    value: Annotated[float, Field(allow_inf_nan=False)]

    @field_validator("metric")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in RULE_METRICS:
            raise ValueError(f"unknown metric {name!r}; known: {', '.join(sorted(RULE_METRICS))}")
        return name


class AnyOf(BaseModel):
    """True if any member is true (members on missing metrics drop out)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    any: Annotated[list[Condition], Field(min_length=1)]


class AllOf(BaseModel):
    """True if every evaluable member is true and at least one is evaluable."""

    model_config = ConfigDict(extra="forbid", strict=True)
    all: Annotated[list[Condition], Field(min_length=1)]


def _condition_kind(data: Any) -> str:
    if isinstance(data, Mapping):
        return "any" if "any" in data else "all" if "all" in data else "compare"
    return "any" if isinstance(data, AnyOf) else "all" if isinstance(data, AllOf) else "compare"


Condition = Annotated[
    Union[  # noqa: UP007  (a forward-referenced recursive union)
        Annotated[Compare, Tag("compare")],
        Annotated[AnyOf, Tag("any")],
        Annotated[AllOf, Tag("all")],
    ],
    Discriminator(_condition_kind),
]
AnyOf.model_rebuild()
AllOf.model_rebuild()


class Rule(BaseModel):
    """One verdict: its name (the class), when it applies, and what to tell the user."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
    text: str
    when: Condition | Literal["always"]
    alternative_explanation: str
    counter_experiment: str


class RuleSet(BaseModel):
    """An ordered rules file; first match wins."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    rules: Annotated[list[Rule], Field(min_length=1)]
    # A verdict within this distance of its threshold, or of another rule's, is borderline;
    # per metric key, in its unit (percentage points, waves...), `default` for the others.
    borderline: dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]] = Field(
        default_factory=lambda: {"default": 2.0}
    )

    @field_validator("borderline")
    @classmethod
    def _known_metrics(cls, margins: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(margins) - RULE_METRICS - {"default"})
        if unknown:
            raise ValueError(f"unknown metric {unknown[0]!r} in borderline margins")
        return margins

    @model_validator(mode="after")
    def _complete(self) -> RuleSet:
        names = [r.name for r in self.rules]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate rule names: {', '.join(dupes)}")
        if self.rules[-1].when != "always":
            raise ValueError("the last rule must have `when: always` so every kernel gets a class")
        return self

    def summary_text(self) -> str:
        """All rule texts on one line, in order (the legacy `rules` field)."""
        return "; ".join(f"{r.name}: {r.text}" for r in self.rules)


@dataclass(frozen=True)
class LoadedRules:
    """A rule set with the identity of the file it came from: `path` as given (for messages),
    the sha256 and the text of the file (kept in the cards, so that a comparison finds the
    thresholds anywhere)."""

    rules: RuleSet
    path: str
    sha256: str
    text: str = ""

    @property
    def file_name(self) -> str:
        """The file as cards name it, the same from any working folder: `default` for the
        packaged rules, else the file's name (`roofline.yaml`)."""
        return "default" if self.path == "default" else Path(self.path).name


@dataclass
class Verdict:
    """The outcome for one kernel."""

    rule: Rule
    unchecked: list[str] = field(default_factory=list)


def holds(
    cond: Compare | AnyOf | AllOf, values: Mapping[str, float | None], unchecked: list[str]
) -> bool | None:
    """Three-valued: True, False, or None (unknown) when the answer depends on a metric that is
    missing or NaN. `any` holds if one member holds, `all` fails if one member fails; otherwise
    an unknown member makes the group unknown. Metrics that left a group unknown are listed."""
    if isinstance(cond, Compare):
        value = values.get(cond.metric)
        if value is None or math.isnan(value):
            settled = from_bound(cond, values)
            if settled is not None:
                return settled
            if cond.metric not in unchecked:
                unchecked.append(cond.metric)
            return None
        return OPERATORS[cond.op](value, cond.value)
    members = cond.any if isinstance(cond, AnyOf) else cond.all
    decisive = isinstance(cond, AnyOf)  # the member value that settles the group
    unknown = False
    for member in members:
        result = holds(member, values, unchecked)
        if result is decisive:
            return decisive
        unknown = unknown or result is None
    return None if unknown else not decisive


def from_bound(cond: Compare, values: Mapping[str, float | None]) -> bool | None:
    """The comparison decided for a metric that was not measured, from a measured metric that
    bounds it (AT_MOST); None when no bound settles it."""
    found = bound_deciding(cond, values)
    return None if found is None else found[0]


def bound_deciding(
    cond: Compare, values: Mapping[str, float | None]
) -> tuple[bool, str, float] | None:
    """Whether the comparison holds, by the measured metric that settles it and its value: a
    metric bounding it from above (sm_pct for tensor_pct) settles `< t` as held and `>= t` as
    failed when below t; one bounding it from below (issue_pct for sm_pct) settles `>= t` as held
    and `< t` as failed when at or above t. Of several, the farthest from t; None if none."""
    compare, threshold, below = OPERATORS[cond.op], cond.value, cond.op in ("<", "<=")
    found: list[tuple[bool, str, float]] = []
    if cond.op in ("==", "!="):
        return None
    for smaller, larger in AT_MOST:
        if cond.metric not in (smaller, larger):
            continue
        other = larger if cond.metric == smaller else smaller
        bound = values.get(other)
        if bound is None or math.isnan(bound):
            continue
        upper = other == larger  # the measured metric is at least the missing one
        if upper is below and compare(bound, threshold):  # `< t` under t, `>= t` above it
            found.append((True, other, bound))
        elif upper is not below and not compare(bound, threshold):
            found.append((False, other, bound))
    return max(found, key=lambda f: abs(f[2] - threshold), default=None)


def evaluate(rules: RuleSet, values: Mapping[str, float | None]) -> Verdict:
    """First rule whose condition holds on `values`; a rule whose condition is unknown does not
    fire (the next is tried) and the metrics it could not check are listed."""
    unchecked: list[str] = []
    for rule in rules.rules:
        if isinstance(rule.when, str):  # `always` (a type test: `== "always"` costs a
            return Verdict(rule, unchecked)  # pydantic __eq__ per rule and kernel)
        missing: list[str] = []
        result = holds(rule.when, values, missing)
        if result:
            return Verdict(rule, unchecked)
        if result is None:  # could not be decided: say which metrics it needed
            unchecked.extend(m for m in missing if m not in unchecked)
    raise AssertionError("unreachable: the last rule is `always`")


def load_rules(path: Path | None = None) -> LoadedRules:
    """Validate a rules file (default: the packaged legacy rules); errors name file:line:field."""
    path = path or DEFAULT_RULES
    text = read_text(path, RulesError, MAX_RULES_BYTES)
    label = "default" if path == DEFAULT_RULES else str(path)
    return rules_from_text(text, label)


def rules_from_text(text: str, label: str) -> LoadedRules:
    """Validate the text of a rules file (read from `label`, or kept in a cards file); one
    larger than a rules file may be is refused as its file would be (RulesError)."""
    if len(text) > MAX_RULES_BYTES:  # characters: at least as many bytes
        raise RulesError(
            f"{label}: larger than {MAX_RULES_BYTES >> 10} KiB, the most a rules file holds"
        )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    ruleset = cached(RuleSet, digest)
    if ruleset is None:
        ruleset = validate_yaml(Path(label), RuleSet, RulesError, text)
        keep(ruleset, digest)
    return LoadedRules(ruleset, label, digest, text)
