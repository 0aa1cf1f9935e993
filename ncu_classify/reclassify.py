"""reclassify: re-apply a rules file to existing card files, ours or the legacy pipeline's.

Works on the JSON document itself so that every field the rules do not touch, and the order of
cards and kernels, is kept. Legacy files carry two known defects that are handled here:
durations printed in ms but stored as `dur_us` (repaired when the kernel's elapsed cycles prove
the unit, and noted on the kernel), and kernel entries whose text between `<` and `>` was lost
(they keep their evidence block, which is then what the rules read).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from .atomic import write_text_atomic
from .cards import UNRESOLVED, count_classes
from .errors import CardsError
from .metrics import CATALOG, EVIDENCE_KEYS, derive
from .rules import LoadedRules, evaluate

# A kernel's implied SM clock, elapsed cycles / duration, must be a real clock (MHz).
PLAUSIBLE_MHZ = (300.0, 3000.0)


def load_cards(path: Path) -> dict[str, Any]:
    """Read a cards file; it must be a JSON object with a `cards` list."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CardsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CardsError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cards"), list):
        raise CardsError(f"{path}: not a cards file (no top-level `cards` list)")
    for index, card in enumerate(doc["cards"]):
        if not isinstance(card, dict) or not isinstance(card.get("kernels", []), list):
            raise CardsError(f"{path}: cards[{index}] is not a card object with a kernels list")
    return doc


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


def cards_json_text(doc: dict[str, Any]) -> str:
    """JSON text with one card per line: diffable card by card, and encoded by the C encoder
    (`indent=` would switch json to its pure-Python encoder, the slowest step of classify)."""
    parts = []
    for key, value in doc.items():
        if key == "cards" and value:
            body = "[\n" + ",\n".join(f"    {_compact(card)}" for card in value) + "\n  ]"
        else:
            body = _compact(value)
        parts.append(f"  {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def write_cards_json(path: Path, doc: dict[str, Any]) -> None:
    """Write a cards document atomically."""
    write_text_atomic(path, cards_json_text(doc))
