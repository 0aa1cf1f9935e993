"""Checks of command-line values that typer cannot express: each bad value is a usage error
(exit 2) naming the option, before any work is done."""

from __future__ import annotations

import re

import typer


def positive_int(value: int | None) -> int | None:
    """An optional count: 1 or more."""
    if value is not None and value < 1:
        raise typer.BadParameter(f"{value}: must be 1 or more")
    return value


MAX_REPEAT = 100  # beyond it a Student-t interval no longer narrows to anything useful


def repeat_count(value: int) -> int:
    """--repeat: 1 (a single measurement) to MAX_REPEAT."""
    if not 1 <= value <= MAX_REPEAT:
        raise typer.BadParameter(f"{value}: must be between 1 and {MAX_REPEAT}")
    return value


def positive_float(value: float) -> float:
    """Seconds: more than 0 (NaN refused too)."""
    if not value > 0:  # also refuses nan
        raise typer.BadParameter(f"{value}: must be more than 0 seconds")
    return value


def parse_gpus(text: str | None) -> tuple[int, ...]:
    """`0,1` as distinct CUDA device indices; () where --gpus is not given (an empty one,
    `--gpus ""`, names no device: refused)."""
    if text is None:
        return ()
    items = [x.strip() for x in text.split(",") if x.strip()]
    if (
        not items
        or not all(re.fullmatch(r"\d{1,4}", x) for x in items)
        or len(set(items)) != len(items)
    ):
        raise typer.BadParameter(f"{text!r}: expected distinct CUDA device indices such as 0,1")
    return tuple(int(x) for x in items)


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` with 1 <= K <= N."""
    match = re.fullmatch(r"(\d{1,6})/(\d{1,6})", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise typer.BadParameter(f"{text!r}: expected K/N with 1 <= K <= N, e.g. 2/8")
    return int(match.group(1)), int(match.group(2))


def coverage_percent(value: float | None) -> float | None:
    """--coverage: a share of each stage's kernel time, more than 0 and at most 100 percent."""
    if value is not None and not 0 < value <= 100:  # also refuses nan
        raise typer.BadParameter(f"{value}: a percentage more than 0 and at most 100")
    return value


def light_percent(value: float | None) -> float | None:
    """--light-after: a share of each stage's kernel time, 0 (no light tier: on --resume, the
    light shapes captured again in full) or more than 0 and less than 100."""
    if value is not None and not 0 <= value < 100:  # also refuses nan
        raise typer.BadParameter(f"{value}: 0, or a percentage more than 0 and less than 100")
    return value


def capture_order(value: str) -> str:
    """--order: `time` (largest program time first) or `file`."""
    if value not in ("time", "file"):
        raise typer.BadParameter(f"{value!r}: time or file")
    return value
