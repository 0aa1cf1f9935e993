"""Figures that were not measured, in files read back: NaN and Infinity are read as null
(`textio.read_json`), i.e. missing, and a missing figure is never a reason to refuse a file.
Where a model needs the figure (a spread's mean, a hot unit's share), the object that lacks it
is read as missing as a whole: an optional one as null, a member of a list or map left out."""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator

SPREAD_FIGURES = ("n", "mean", "median", "min", "max")  # what a spread is not without


def _unmeasured(value: Any, figures: tuple[str, ...]) -> bool:
    """An object whose required figure is there but null (NaN in the file)."""
    return isinstance(value, dict) and any(k in value and value[k] is None for k in figures)


def none_if_unmeasured(*figures: str) -> BeforeValidator:
    """An optional object read as null where one of `figures` is null; a list of numbers
    (an interval) read as null where one of them is (pass no figures)."""

    def check(value: Any) -> Any:
        if isinstance(value, list) and not figures:
            return None if None in value else value
        return None if _unmeasured(value, figures) else value

    return BeforeValidator(check)


def without_unmeasured(*figures: str) -> BeforeValidator:
    """A list or map of objects without those where one of `figures` is null."""

    def check(value: Any) -> Any:
        if isinstance(value, list):
            return [v for v in value if not _unmeasured(v, figures)]
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if not _unmeasured(v, figures)}
        return value

    return BeforeValidator(check)
