"""Fit the fields of a legacy document to the card models, field by field, losing nothing.

Files written by the legacy pipeline (and edited by hand since) hold what they hold: a note as
a list, a resolution as a number, a field nobody here knows. Each value is kept when the model
can hold it, coerced when the meaning is certain (a list of notes joined, `480` read as
`"480"`, an integral float of FLOPs as an int), and otherwise set aside verbatim under
`legacy_fields`, with one warning per field and kind of problem (not one per card).
Impossible measurements (a kernel of 0 us, a negative FLOP count, 250 % of a peak) are set aside
the same way and read as missing, so they never decide a verdict nor wipe a total.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

Coercer = Callable[[Any], Any]
NO_VALUE = object()  # a coercer's answer when it cannot read the value
PCT_SLACK = 0.5  # rounding in the legacy files: 100.3 % is 100 %, 101 % is no measurement
RATES = ("l2_hit_pct",)  # hit rates, not shares of a peak: ncu reads them above 100 (101.3)


class Fitter:
    """Fits legacy values to models and tallies what it could not use, for the warnings."""

    def __init__(self) -> None:
        self.problems = _Tally()

    def fit(
        self, model: type[BaseModel], raw: Mapping[str, Any], where: str, skip: tuple[str, ...]
    ) -> dict[str, Any]:
        """The fields of `raw` that `model` can hold (coerced where certain); the rest go to
        `legacy_fields`. Keys in `skip` are left to the caller, as they are."""
        fitted: dict[str, Any] = {}
        aside: dict[str, Any] = dict(raw.get("legacy_fields") or {})
        for key, value in raw.items():
            if key in skip or key == "legacy_fields":
                fitted[key] = value
            elif key not in model.model_fields:
                aside[key] = value
                self.problems[where + key, "a field the card format does not have, kept"] += 1
            else:
                self._fit_one(model, key, value, where, fitted, aside)
        if aside:
            fitted["legacy_fields"] = aside
        return fitted

    def _fit_one(
        self,
        model: type[BaseModel],
        key: str,
        value: Any,
        where: str,
        fitted: dict[str, Any],
        aside: dict[str, Any],
    ) -> None:
        """One field: kept, coerced, or set aside (then the model's default applies)."""
        if key in COUNTS and isinstance(value, (int, float)) and value < 0:
            aside[key] = value
            fitted[key] = None
            self.problems[where + key, f"negative ({value:g}): read as unknown"] += 1
            return
        if _holds(model, key, value):
            fitted[key] = value
            return
        coerced = COERCERS.get(key, _never)(value)
        if coerced is not NO_VALUE and _holds(model, key, coerced):
            fitted[key] = coerced
            self.problems[where + key, f"{_kind(value)}, read as {_kind(coerced)}"] += 1
            return
        aside[key] = value
        fallback = _fallback(model, key)
        if fallback is not NO_VALUE:
            fitted[key] = fallback
        self.problems[where + key, f"{_kind(value)}, not usable: kept under legacy_fields"] += 1

    def numbers(self, raw: Any, where: str, aside: dict[str, Any]) -> dict[str, float | None]:
        """A metrics or evidence block: finite, physically possible numbers kept; anything
        else read as missing and its value set aside (`aside[key]`)."""
        if not isinstance(raw, Mapping):
            if raw is not None:
                self.problems[where, f"{_kind(raw)}, not usable: read as no metrics"] += 1
            return {}
        out: dict[str, float | None] = {}
        for key, value in raw.items():
            number, why = _measurement(str(key), value)
            out[str(key)] = number
            if why:
                aside[str(key)] = value
                self.problems[f"{where}.{key}", why] += 1
        return out

    def warnings(self, source: str) -> list[str]:
        """One line per field and problem, with how many places had it and the first."""
        lines = []
        for (field, problem), count in self.problems.items():
            if count == 1:
                lines.append(f"{source}: {self.problems.first[field, problem]}: {problem}")
            else:
                first = self.problems.first[field, problem]
                lines.append(f"{source}: {field}: {problem} ({count} places, first {first})")
        return lines


class _Tally(Counter[tuple[str, str]]):
    """Problems counted per field pattern (`cards[*].scheduler_note`), keeping the first
    place each was seen at (`cards[0].scheduler_note`)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[tuple[str, str], str] = {}

    def __missing__(self, key: tuple[str, str]) -> int:
        return 0

    def __setitem__(self, key: tuple[str, str], value: int) -> None:
        place, problem = key
        pattern = (_INDEX.sub("[*]", place), problem)
        self.first.setdefault(pattern, place)
        super().__setitem__(pattern, value)

    def __getitem__(self, key: tuple[str, str]) -> int:
        place, problem = key
        return super().__getitem__((_INDEX.sub("[*]", place), problem))


_INDEX = re.compile(r"\[\d+\]")


def _measurement(key: str, value: Any) -> tuple[float | None, str | None]:
    """A metric value as a number, or None with why it is no measurement."""
    if value is None:
        return None, None
    number = _number(value)
    if number is None:
        return None, f"{_kind(value)}, not a number: read as missing"
    if not math.isfinite(number):
        return None, f"{value!r} is not finite: read as missing"
    if number < 0:
        return None, f"negative ({number:g}): read as missing"
    if key == "dur_us" and number == 0:
        return None, "0 us is no kernel duration: read as missing (the card has no total)"
    if key.endswith("_pct") and key not in RATES and number > 100 + PCT_SLACK:
        return None, f"{number:g} % of a peak is impossible: read as missing"
    return number, None


def _number(value: Any) -> float | None:
    """A JSON number (or a numeric string) as a float; bools and others are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


@cache
def _adapter(model: type[BaseModel], key: str) -> TypeAdapter[Any]:
    """The field's type with its constraints (`calls >= 1`), as the model validates it."""
    field = model.model_fields[key]
    annotation: Any = field.annotation
    if field.metadata:
        annotation = Annotated.__class_getitem__((annotation, *field.metadata))  # type: ignore[attr-defined]
    return TypeAdapter(annotation)


def _holds(model: type[BaseModel], key: str, value: Any) -> bool:
    """Whether the model's field takes `value` as it is (strict, as files are validated)."""
    try:
        _adapter(model, key).validate_python(value, strict=True)
    except (ValidationError, TypeError, ValueError, OverflowError, RecursionError):
        return False
    return True


def _fallback(model: type[BaseModel], key: str) -> Any:
    """The value a field takes when the legacy one is set aside: its default, else None."""
    field = model.model_fields[key]
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    if not field.is_required():
        return field.default
    return None if _holds(model, key, None) else NO_VALUE


def _kind(value: Any) -> str:
    """What a value is, for a warning: `a list`, `a number (480)`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int):
        shown = str(value) if abs(value) < 10**18 else f"{len(str(value))} digits"
        return f"a whole number ({shown})"
    if isinstance(value, float):
        return f"a number ({value:g})"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def _never(value: Any) -> Any:
    return NO_VALUE


def _text(value: Any) -> Any:
    """Text from a number (`480`), a list of texts (joined by `; `; empty: none)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "; ".join(value) if value else None
    return NO_VALUE


def _texts(value: Any) -> Any:
    """A list of texts from one text."""
    return [value] if isinstance(value, str) else NO_VALUE


def _count(value: Any) -> Any:
    """A whole non-negative count from an integral float; negative counts are no counts."""
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return NO_VALUE


def _object(value: Any) -> Any:
    """An empty object for null (`shape_parameters: null`, `metrics: null`)."""
    return {} if value is None else NO_VALUE


def _rule_text(value: Any) -> Any:
    """The rules text from an object or a list of rules (as JSON)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _text(value)


COUNTS = ("nominal_mac_flops", "nominal_bytes", "summed_kernel_us", "achieved_tflops")
COERCERS: dict[str, Coercer] = {
    "resolution": _text,
    "scheduler_note": _text,
    "ncu_output": _text,
    "note": _text,
    "input_sha256": _text,
    "generated_at": _text,
    "notes": _texts,
    "nominal_mac_flops": _count,
    "nominal_bytes": _count,
    "calls": _count,
    "shape_parameters": _object,
    "rules": _rule_text,
}
