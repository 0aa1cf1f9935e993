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
from typing import Any, get_args

from ..core.errors import CardsError
from ..core.metrics import CATALOG
from ..core.paths import short_names
from .legacy_fit import Fitter
from .model import SCHEMA_VERSION, VERDICT_FIELDS, Card, CardFile, CardStatus, KernelCard
from .rollup import count_classes

CARD_STATUSES = get_args(CardStatus)

# A kernel's implied SM clock, elapsed cycles / duration, must be a real clock (MHz).
PLAUSIBLE_MHZ = (300.0, 3000.0)


def is_legacy(doc: Mapping[str, Any]) -> bool:
    """True for a legacy cards document: ours always carries a schema_version."""
    return "schema_version" not in doc


def from_legacy(doc: Mapping[str, Any], source: str) -> CardFile:
    """Our CardFile from a legacy document, read as it comes (`legacy_fit`): odd fields are
    coerced or kept under `legacy_fields` and named in `input_warnings`; a card that cannot be
    built (no group) is left out with a warning. CardsError only when no card can be built.
    Rules identity stays null until reclassified."""
    fitter = Fitter()
    name = short_names([source])[0]
    cards = []
    for index, raw in enumerate(doc.get("cards") or []):
        card = _card(raw, f"cards[{index}].", fitter)
        if card is not None:
            cards.append(card)
    if not cards:
        why = fitter.warnings("")[0].removeprefix(": ") if fitter.problems else "no cards"
        raise CardsError(f"{source}: legacy cards file with no card that can be read ({why})")
    top = fitter.fit(CardFile, {k: v for k, v in doc.items() if k != "cards"}, "", skip=())
    converted: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "source_format": "legacy",
        "tool_version": None,
        "rules_id": None,
        "rules_file": None,
        "rules_sha256": None,
        "inputs": [name],
        "rules": "",
        "generated_at": None,
        **top,
        "cards": cards,
    }
    _counts(converted)
    converted["input_warnings"] = [  # the file named as from any folder (`short_names`)
        *converted.get("input_warnings", []),
        *fitter.warnings(name),
        *_repeats(cards, name),
    ]
    return CardFile.model_validate(converted, strict=True)


def _repeats(cards: list[dict[str, Any]], source: str) -> list[str]:
    """A warning per card that repeats an earlier card's group and shape parameters (the real
    file lists one DiT linear twice); cards without parameters (the casts) are not compared."""
    first: dict[tuple[str, str], int] = {}
    lines = []
    for index, card in enumerate(cards):
        if not card.get("shape_parameters"):
            continue
        key = (card["group"], json.dumps(card["shape_parameters"], sort_keys=True, default=str))
        if key in first:
            lines.append(
                f"{source}: cards[{index}] repeats cards[{first[key]}] (group"
                f" {card['group']!r}, same shape parameters): both count in summaries and"
                " diffs, as the file lists them; the diff shows the second as a repeat"
            )
        first.setdefault(key, index)
    return lines


def _counts(converted: dict[str, Any]) -> None:
    """The legacy class counts, recounted from the cards when the file's are missing or set
    aside (`summary` as a list)."""
    if "summary" in converted and "by_stage" in converted:
        return
    cards = converted["cards"]
    summary, stages = count_classes((c["stage"], c.get("primary") or c["status"]) for c in cards)
    converted.setdefault("summary", summary)
    converted.setdefault("by_stage", stages)


def _card(raw: Any, where: str, fitter: Fitter) -> dict[str, Any] | None:
    """One legacy card in our shape: fields fitted, kernels converted, defects repaired or
    flagged; None (with a warning) when it has no group to be known by."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("group"), str):
        fitter.problems[where.rstrip("."), "no group id: the card is left out"] += 1
        return None
    notes: list[str] = []
    if isinstance(raw.get("shape_parameters"), str):  # attention cards: JSON text
        shape, note = _parse_shape(raw["shape_parameters"])
        raw, notes = {**raw, "shape_parameters": shape}, [note]
    card = fitter.fit(Card, raw, where, skip=("kernels",))
    prefix = raw["group"].split(":")
    for key, part in (("stage", 0), ("op", 1)):  # certain from the legacy group grammar
        if not isinstance(card.get(key), str):
            card[key] = prefix[part] if len(prefix) > part else raw["group"]
    out = {**dict.fromkeys(("summed_kernel_us", *VERDICT_FIELDS)), **card}  # required by Card
    listed = raw.get("kernels")
    if not isinstance(listed, list):
        fitter.problems[where + "kernels", "not a list: read as no kernels"] += 1
        listed = []
    kernels = [k for i, x in enumerate(listed) if (k := _kernel(x, f"{where}kernels[{i}]", fitter))]
    out["kernels"] = kernels
    notes = [*(out.get("notes") or []), *notes]
    truncated = _truncation(out, kernels)
    if truncated:
        notes.append(truncated)
        out.update(dict.fromkeys(VERDICT_FIELDS[1:]), status="incomplete")
    elif out.get("status") not in CARD_STATUSES:
        out["status"] = "classified" if out.get("primary") else "unresolved"
    out["summed_kernel_us"], summed_note = _summed(out, kernels, complete=not truncated)
    notes += [summed_note] if summed_note else []
    out["missing_metrics"] = sorted({m for k in kernels for m in _missing(k)})
    if notes:
        out["notes"] = notes
    return out


def _kernel(raw: Any, where: str, fitter: Fitter) -> dict[str, Any] | None:
    """One legacy kernel in our shape; impossible metric values read as missing and kept."""
    if not isinstance(raw, Mapping):
        fitter.problems[where, "not a kernel object: left out"] += 1
        return None
    kernel = fitter.fit(KernelCard, raw, where + ".", skip=("metrics", "evidence"))
    if not isinstance(kernel.get("kernel"), str):
        kernel["kernel"] = "(unnamed)"
    aside: dict[str, Any] = {}
    metrics = fitter.numbers(raw.get("metrics"), where + ".metrics", aside)
    evidence = fitter.numbers(raw.get("evidence"), where + ".evidence", {})
    out = {"classification": None, "rule": None, **kernel, "metrics": metrics, "evidence": evidence}
    repairs = [*out.get("metric_repairs", [])]
    if aside:
        out.setdefault("legacy_fields", {})["metrics"] = aside
        repairs.append(f"not measurements, read as missing: {_listing(aside)}")
    note = repair_duration(metrics)
    if note:
        repairs.append(note)
    if repairs:
        out["metric_repairs"] = repairs
    out["missing_metrics"] = [s.key for s in CATALOG if metrics.get(s.key) is None]
    return out


def _listing(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {json.dumps(v)}" for k, v in values.items())


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
    except (ValueError, RecursionError):  # not JSON, or nested past Python's recursion limit
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
