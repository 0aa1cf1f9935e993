"""The headroom part of a diff for people: per stage, the time recoverable at kernel roofs and
at the speed of light on both sides, and how much of the baseline's the change took."""

from __future__ import annotations

from ..compare.model import DiffFile
from ..core.text import md_text


def _f(value: float | None, spec: str = "{:,.1f}") -> str:
    return "-" if value is None else spec.format(value)


def headroom_markdown(diff: DiffFile) -> list[str]:
    """Markdown lines of the headroom table (none when neither side has timed cards)."""
    if not diff.headroom:
        return []
    lines = [
        "",
        "### Headroom per stage (us per inference)",
        "",
        "| stage | measured | recoverable at kernel roofs | recoverable at speed of light |"
        " saved | share of the baseline's speed-of-light headroom |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in diff.headroom:
        one, other = row.baseline, row.candidate
        pairs = [
            (one.measured_us if one else None, other.measured_us if other else None),
            (one.recoverable_at_kernel_roof_us if one else None,
             other.recoverable_at_kernel_roof_us if other else None),
            (one.recoverable_at_sol_us if one else None,
             other.recoverable_at_sol_us if other else None),
        ]  # fmt: skip
        cells = [f"{_f(a)} -> {_f(b)}" for a, b in pairs]
        lines.append(
            f"| {md_text(row.stage)} | {' | '.join(cells)} | {_f(row.saved_us)} |"
            f" {_f(row.saved_of_sol_pct, '{:.1f} %')} |"
        )
    return lines
