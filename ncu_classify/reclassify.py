"""reclassify: re-apply a rules file to existing card files, ours or the legacy pipeline's.

Works on the JSON document itself so that every field the rules do not touch, and the order of
cards and kernels, is kept. Legacy files carry two known defects that are handled here:
durations printed in ms but stored as `dur_us` (repaired when the kernel's elapsed cycles prove
the unit, and noted on the kernel), and kernel entries whose text between `<` and `>` was lost
(they keep their evidence block, which is then what the rules read).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from .cards import UNRESOLVED, count_classes
from .metrics import CATALOG, EVIDENCE_KEYS, derive
from .rules import LoadedRules, evaluate

# A kernel's implied SM clock, elapsed cycles / duration, must be a real clock (MHz).
PLAUSIBLE_MHZ = (300.0, 3000.0)


def repair_duration(metrics: dict[str, Any]) -> str | None:
    """Fix a `dur_us` that is really in ms, when elapsed cycles prove it; return a note."""
    dur, cycles = metrics.get("dur_us"), metrics.get("cycles_elapsed")
    if not isinstance(dur, (int, float)) or not isinstance(cycles, (int, float)) or dur <= 0:
        return None
    implied_mhz = cycles / dur
    low, high = PLAUSIBLE_MHZ
    if implied_mhz > high and low <= implied_mhz / 1000 <= high:
        metrics["dur_us"] = float(f"{dur * 1000:.12g}")
        return (
            f"dur_us {dur} was in ms (cycles_elapsed {cycles:g} / dur implies"
            f" {implied_mhz:.0f} MHz); now {metrics['dur_us']:g}"
        )
    return None


def kernel_values(kernel: dict[str, Any]) -> dict[str, float | None]:
    """Rule inputs of a stored kernel: its metrics, derived ratios, else its evidence block."""
    metrics = kernel.get("metrics") or {}
    evidence = kernel.get("evidence") or {}
    values: dict[str, float | None] = {s.key: _number(metrics.get(s.key)) for s in CATALOG}
    values.update(derive(values))
    for key in EVIDENCE_KEYS:
        if values.get(key) is None:
            values[key] = _number(evidence.get(key))
    return values


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _reclassify_kernel(kernel: dict[str, Any], rules: LoadedRules) -> None:
    if isinstance(kernel.get("metrics"), dict):
        note = repair_duration(kernel["metrics"])
        if note:
            kernel["metric_repairs"] = [note]
    values = kernel_values(kernel)
    if all(values.get(k) is None for k in EVIDENCE_KEYS):
        kernel.update(classification=None, rule=None, unchecked_metrics=list(EVIDENCE_KEYS))
        return
    verdict = evaluate(rules.rules, values)
    kernel["classification"] = verdict.rule.name
    kernel["rule"] = verdict.rule.text
    kernel["evidence"] = {k: values.get(k) for k in EVIDENCE_KEYS}
    kernel["unchecked_metrics"] = verdict.unchecked


def _duration(kernel: dict[str, Any]) -> float | None:
    return _number((kernel.get("metrics") or {}).get("dur_us"))


def _incomplete(card: dict[str, Any], kernels: list[Any]) -> str | None:
    """Why the kernel list cannot be trusted: the named dominant kernel is not in it."""
    named = card.get("dominant_kernel")
    listed = {k.get("kernel") for k in kernels if isinstance(k, dict)}
    if named and named not in listed:
        return (
            f"dominant_kernel {named!r} is not among the {len(kernels)} listed kernels:"
            " the kernel list is truncated, so no primary class is given"
        )
    return None


def _reclassify_card(card: dict[str, Any], rules: LoadedRules) -> None:
    kernels = card.get("kernels") or []
    for kernel in kernels:
        if isinstance(kernel, dict):
            _reclassify_kernel(kernel, rules)
    timed = [k for k in kernels if isinstance(k, dict) and _duration(k) is not None]
    top = max(timed, key=lambda k: _duration(k) or 0.0) if timed else None
    if top is None and len(kernels) == 1 and isinstance(kernels[0], dict):
        top = kernels[0]  # a lone kernel dominates even when its duration was lost
    if timed:
        card["summed_kernel_us"] = round(sum(_duration(k) or 0.0 for k in timed), 6)
    problem = _incomplete(card, kernels)
    if problem:
        card.update(primary=None, primary_rule=None, status="incomplete", notes=[problem])
        return
    if top is None or top.get("classification") is None:
        card.update(primary=None, primary_rule=None, status="unresolved")
        return
    rule = next(r for r in rules.rules.rules if r.name == top["classification"])
    card.update(
        dominant_kernel=top.get("kernel"),
        primary=rule.name,
        primary_rule=rule.text,
        alternative_explanation=rule.alternative_explanation,
        counter_experiment=rule.counter_experiment,
        status="unresolved" if rule.name == UNRESOLVED else "classified",
    )


def reclassify(doc: dict[str, Any], rules: LoadedRules) -> dict[str, Any]:
    """Apply `rules` to every kernel and card of `doc` in place; returns `doc`."""
    for card in doc["cards"]:
        _reclassify_card(card, rules)
    summary, by_stage = count_classes(
        (str(c.get("stage")), c.get("primary") or c.get("status") or "unresolved")
        for c in doc["cards"]
    )
    doc.update(
        rules=rules.rules.summary_text(),
        summary=summary,
        by_stage=by_stage,
        rules_id=rules.rules.id,
        rules_file=rules.path,
        rules_sha256=rules.sha256,
        reclassified_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )
    return doc
