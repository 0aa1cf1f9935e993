"""Adapter: a cards file of the legacy in-house pipeline -> our CardFile.

Every legacy field is kept (top level: generated_at, rules, cards, summary, by_stage, scope; the
card and kernel fields of the legacy format). Known defects of that format are repaired where
the file proves the fix and flagged where it cannot:

- `dur_us` values that are really milliseconds are multiplied back when the kernel's elapsed
  cycles imply an impossible clock (noted in the kernel's `metric_repairs`);
- a card whose `dominant_kernel` is not among its listed kernels has a truncated kernel list: it
  becomes `incomplete`, without a primary class (a layout transpose must not stand in for the
  missing conv kernel), and keeps the legacy `summed_kernel_us`, the only total that covers it;
- missing values (null tensor_pct and waves of attention kernels, kernels that kept only their
  evidence block) stay null and are listed in `missing_metrics`, never read as 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .cards import SCHEMA_VERSION, VERDICT_FIELDS, CardFile
from .metrics import CATALOG

# A kernel's implied SM clock, elapsed cycles / duration, must be a real clock (MHz).
PLAUSIBLE_MHZ = (300.0, 3000.0)


def is_legacy(doc: Mapping[str, Any]) -> bool:
    """True for a legacy cards document: ours always carries a schema_version."""
    return "schema_version" not in doc


def from_legacy(doc: Mapping[str, Any], source: str) -> CardFile:
    """Our CardFile from a legacy document (raises pydantic's ValidationError if malformed);
    `source` is where it was read from. Rules identity stays null until reclassified."""
    converted: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "source_format": "legacy",
        "tool_version": None,
        "rules_id": None,
        "rules_file": None,
        "rules_sha256": None,
        "inputs": [source],
    }
    converted.update((k, v) for k, v in doc.items() if k != "cards")
    converted["cards"] = [_card(card) for card in doc["cards"]]
    return CardFile.model_validate(converted, strict=True)


def _card(card: Mapping[str, Any]) -> dict[str, Any]:
    """One legacy card in our shape: kernels converted, defects repaired or flagged."""
    out = {**dict.fromkeys(("summed_kernel_us", *VERDICT_FIELDS)), **card}  # required by Card
    kernels = [_kernel(k) for k in card.get("kernels") or []]
    out["kernels"] = kernels
    notes: list[str] = []
    if isinstance(card.get("shape_parameters"), str):
        out["shape_parameters"], note = _parse_shape(card["shape_parameters"])
        notes.append(note)
    truncated = _truncation(card, kernels)
    if truncated:
        notes.append(truncated)
        out.update(dict.fromkeys(VERDICT_FIELDS[1:]), status="incomplete")
    out["summed_kernel_us"], summed_note = _summed(card, kernels, complete=not truncated)
    notes += [summed_note] if summed_note else []
    out["missing_metrics"] = sorted({m for k in kernels for m in _missing(k)})
    if notes:
        out["notes"] = notes
    return out


def _kernel(kernel: Any) -> Any:
    """One legacy kernel in our shape; anything that is not an object is left to validation."""
    if not isinstance(kernel, Mapping):
        return kernel
    out = {"metrics": {}, "classification": None, "rule": None, "evidence": {}, **kernel}
    metrics = out["metrics"]
    if isinstance(metrics, Mapping):
        metrics = out["metrics"] = dict(metrics)
        note = repair_duration(metrics)
        if note:
            out["metric_repairs"] = [*out.get("metric_repairs", []), note]
        out["missing_metrics"] = [s.key for s in CATALOG if _number(metrics.get(s.key)) is None]
    return out


def repair_duration(metrics: dict[str, Any]) -> str | None:
    """Fix a `dur_us` that is really in ms, when elapsed cycles prove it; return a note."""
    dur, cycles = _number(metrics.get("dur_us")), _number(metrics.get("cycles_elapsed"))
    if dur is None or cycles is None or dur <= 0:
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


def _truncation(card: Mapping[str, Any], kernels: list[Any]) -> str | None:
    """Why the kernel list cannot be trusted: the named dominant kernel is not in it."""
    named = card.get("dominant_kernel")
    listed = {
        k["kernel"] for k in kernels if isinstance(k, Mapping) and isinstance(k.get("kernel"), str)
    }
    if not named or named in listed:
        return None
    return (
        f"dominant_kernel {named!r} is not among the {len(kernels)} listed kernels: the kernel"
        f" list is truncated, so no primary class is given (legacy primary:"
        f" {card.get('primary') or 'none'})"
    )


def _summed(
    card: Mapping[str, Any], kernels: list[Any], *, complete: bool
) -> tuple[float | None, str | None]:
    """Summed kernel time: recomputed from the (repaired) kernels when all are listed with a
    duration; otherwise the legacy total, which also covers the kernels it lacks, with a note."""
    durations = [_number(_metrics(k).get("dur_us")) for k in kernels]
    timed = [d for d in durations if d is not None]
    legacy = _number(card.get("summed_kernel_us"))
    summed = round(sum(timed), 6)
    if complete and kernels and len(timed) == len(durations):
        if legacy is None or abs(summed - legacy) < 1e-3:
            return summed, None
        return summed, f"summed_kernel_us recomputed from the listed kernels (legacy: {legacy:g})"
    if legacy is None or (timed and summed == legacy):
        return legacy, None
    return legacy, (
        f"summed_kernel_us {legacy:g} is the legacy total; {len(timed)} of the"
        f" {len(kernels)} listed kernels have a duration, summing to {summed:g}"
    )


def _parse_shape(text: str) -> tuple[dict[str, Any], str]:
    """Legacy attention cards store shape_parameters as JSON text; parse it when it is an object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return value, "shape_parameters was stored as JSON text; parsed"
    return {"text": text}, "shape_parameters was stored as text; kept under `text`"


def _missing(kernel: Any) -> list[str]:
    missing = kernel.get("missing_metrics") if isinstance(kernel, Mapping) else None
    return missing if isinstance(missing, list) else []


def _metrics(kernel: Any) -> Mapping[str, Any]:
    metrics = kernel.get("metrics") if isinstance(kernel, Mapping) else None
    return metrics if isinstance(metrics, Mapping) else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
