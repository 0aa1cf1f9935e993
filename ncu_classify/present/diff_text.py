"""A comparison as people and programs read it: a rich table for the terminal, Markdown for a
pull request, CSV (one row per shape), JSON (the DiffFile itself).

User text (groups, kernel names) stays text: escaped for the terminal, in code spans with pipes
escaped for Markdown, quoted by the csv module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..compare.model import SHOWN_METRICS, Crossing, DiffFile, ShapeDiff, SideFigures, SideHeader
from ..core.text import counted, md_code, md_text, printable
from .diff_cut import shown_shapes
from .diff_headroom import headroom_markdown, headroom_table
from .diff_rollup import ARROW, rollup_change, rollup_table, us_untimed
from .fit import Fitted, Line, plain_text
from .tables import csv_text

DiffFormat = Literal["table", "md", "json", "csv", "parquet"]


def diff_text(diff: DiffFile, fmt: DiffFormat) -> str:
    """The comparison in `fmt`; every form is deterministic for a given DiffFile."""
    render: dict[str, Callable[[DiffFile], str]] = {
        # ASCII only: no control, bidi or other character a reader's terminal could act on
        "json": lambda d: json.dumps(d.model_dump(mode="json"), indent=1) + "\n",
        "csv": diff_csv,
        "md": diff_markdown,
        "table": diff_table_text,
    }
    return render[fmt](diff)


# --- shared pieces ---------------------------------------------------------------------------


def shape_name(shape: ShapeDiff) -> str:
    """The group id of the candidate (the baseline's if it has none, both if they differ)."""
    base = shape.baseline.group if shape.baseline else None
    cand = shape.candidate.group if shape.candidate else None
    if base and cand and base != cand:
        return f"{cand} (baseline {base})"
    return cand or base or "?"


def verdict(side: SideFigures | None) -> str:
    if side is None:
        return "-"
    return side.primary or side.status


def time_text(shape: ShapeDiff) -> str:
    if shape.duration_ratio is None:
        return "-"
    speed = {"within_noise": "within noise"}.get(shape.speed or "", shape.speed or "")
    return f"x{shape.duration_ratio:.3f} {speed}".strip()


def classes_text(shape: ShapeDiff) -> str:
    """`a -> b`, or `= a` when the class did not change."""
    base, cand = verdict(shape.baseline), verdict(shape.candidate)
    return f"= {base}" if base == cand else f"{base} {ARROW} {cand}"


def _candidate_group(shape: ShapeDiff) -> str:
    side = shape.candidate or shape.baseline
    return side.group if side else "?"


def crossing_text(crossing: Crossing) -> str:
    values = f"{_num(crossing.baseline)} {ARROW} {_num(crossing.candidate)}"
    return f"{crossing.metric} {values} ({crossing.op} {crossing.threshold:g})"


def roof_text(shape: ShapeDiff, hot: bool = False) -> str:
    """% of roof (and hot unit) of each side: `57.1 -> 47.3`; `missing` where a side lacks it."""

    def one(side: SideFigures | None) -> str:
        if side is None:
            return "-"
        pct = "missing" if side.pct_of_roof is None else f"{side.pct_of_roof:.1f}%"
        return f"{pct} {side.hot_unit}" if hot and side.hot_unit else pct

    return f"{one(shape.baseline)} {ARROW} {one(shape.candidate)}"


def change_text(shape: ShapeDiff) -> str:
    text = shape.change.replace("_", " ")
    return f"{text}, kernel changed" if shape.kernel_changed else text


def header_lines(diff: DiffFile) -> list[str]:
    lines = [_side_line("baseline", diff.baseline), _side_line("candidate", diff.candidate)]
    lines.append(
        f"rules: {diff.rules or 'as classified'}; noise: {diff.noise}"
        + (f"; stages: {', '.join(diff.stages)}" if diff.stages else "")
    )
    counts = [f"{n} {k.replace('_', ' ')}" for k, n in diff.counts.items()]
    lines.append("shapes: " + (", ".join(counts) or "none"))
    judged = [s for s in diff.shapes if s.judged_by == "intervals"]
    if judged:
        unsure = sum(s.speed == "inconclusive" for s in judged)
        lines.append(
            f"time judged by the repeats' run-to-run intervals for {len(judged)} of"
            f" {len(diff.shapes)} shapes (the noise file's tolerance for the rest);"
            f" {unsure} inconclusive"
        )
    return lines


def _side_line(name: str, side: SideHeader) -> str:
    gpu = side.gpu
    what = "GPU not recorded"
    if gpu.name:
        what = f"{gpu.name}, {'?' if gpu.sm_count is None else gpu.sm_count} SMs"
        if gpu.sm_clock_ghz_min is not None:
            what += f", SM clock {gpu.sm_clock_ghz_min}-{gpu.sm_clock_ghz_max} GHz"
    shown = ("hgmma_bf16", "dram")
    peaks = ", ".join(f"{k} {v:g}" for k, v in side.peaks.items() if k.startswith(shown))
    soft = ", ".join(f"{k} {v}" for k, v in side.software.model_dump().items() if v is not None)
    what += f"; {soft}" if soft else ""
    rules = side.rules_id or "no rules recorded"
    tool = side.tool_version or side.source_format
    return (
        f"{name}: {side.path} ({counted(side.cards, 'card')}; "
        + (f"{side.projection}; " if side.projection else "")
        + f"{what}"
        + (f"; peaks {peaks}" if peaks else "")
        + f"; rules {rules}; {tool}; {side.generated_at})"
    )


def _num(value: float | None) -> str:
    return "missing" if value is None else f"{value:.4g}"


# --- terminal --------------------------------------------------------------------------------


def diff_renderable(diff: DiffFile) -> Group:
    """Header, warnings, the per-shape table (a section per stage) and the per-stage roll-up."""
    shapes = Table(title="per shape (stage, then file order)")
    listed, shapes.caption = shown_shapes(diff)
    deciding = any(shape.crossings for shape in listed)  # no column that says nothing
    for name in ("shape", "change", "class", "time", "% of roof", "deciding")[: 5 + deciding]:
        # figures (right) and class names stay whole (present.fit); the fold columns fold first
        shapes.add_column(name, justify="right" if name in ("time", "% of roof") else "left")
    stage = None
    for shape in listed:
        if shape.stage != stage:
            stage = shape.stage
            shapes.add_row(Text(printable(f"[{stage}]"), style="bold", overflow="fold"))
        crossed = "; ".join(map(crossing_text, shape.crossings))
        cells = [_candidate_group(shape), change_text(shape), classes_text(shape)]
        cells += [time_text(shape), roof_text(shape), crossed]
        shapes.add_row(*(Text(printable(c)) for c in cells[: 5 + deciding]))
    rollup = Fitted(rollup_table(diff))
    lines: list[RenderableType] = [Line(printable(line)) for line in header_lines(diff)]
    lines += [Line(printable(f"warning: {w}")) for w in diff.warnings]
    headroom = headroom_table(diff)
    fitted = [Fitted(shapes, fold=("shape", "change", "deciding")), rollup]
    return Group(*lines, *fitted, *([Fitted(headroom, fold=("stage",))] if headroom else []))


def diff_table_text(diff: DiffFile) -> str:
    """The terminal form as plain text (for -o with the default format)."""
    return plain_text(lambda console: console.print(diff_renderable(diff)))


# --- Markdown --------------------------------------------------------------------------------


def diff_markdown(diff: DiffFile) -> str:
    """A Markdown summary for a pull request: header, changes first, roll-up, noise seen."""
    lines = ["## ncu-classify diff", ""]
    lines += [f"- {md_text(line)}" for line in header_lines(diff)]
    lines += [f"- **warning**: {md_text(w)}" for w in diff.warnings]
    lines += ["", "### Per shape", ""]
    lines += [
        "| stage | shape | change | baseline | candidate | time | % of roof, hot unit | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for shape in diff.shapes:
        cells = [
            md_text(shape.stage),
            md_code(shape_name(shape)),
            md_text(change_text(shape)),
            md_text(verdict(shape.baseline)),
            md_text(verdict(shape.candidate)),
            md_text(time_text(shape)),
            md_text(roof_text(shape, hot=True)),
            md_text(shape.why or ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "### Per stage and class", ""]
    lines += [
        "| stage | class | cards | baseline us | candidate us | change us |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in diff.rollup:
        cards = f"{row.baseline_cards} {ARROW} {row.candidate_cards}"
        lines.append(
            f"| {md_text(row.stage)} | {md_text(row.primary)} | {md_text(cards)} |"
            f" {us_untimed(row.baseline_us, row.baseline_untimed, row.baseline_cards)}"
            f" | {us_untimed(row.candidate_us, row.candidate_untimed, row.candidate_cards)}"
            f" | {rollup_change(row)} |"
        )
    lines += headroom_markdown(diff)
    lines += ["", "### Change seen per metric (shapes with the same dominant kernel)", ""]
    lines += ["| metric | shapes | median | p90 | max |", "|---|---:|---:|---:|---:|"]
    for seen in diff.noise_seen:
        lines.append(
            f"| {md_text(seen.metric)} | {seen.shapes} | {seen.median:g} | {seen.p90:g} |"
            f" {seen.max:g} |"
        )
    return "\n".join(lines) + "\n"


# --- CSV -------------------------------------------------------------------------------------

SIDE_COLUMNS = (
    "group",
    "primary",
    "dominant_kernel",
    "summed_kernel_us",
    "dominant_us",
    "deciding_metric",
    "borderline",
    *SHOWN_METRICS,
    "pct_of_roof",
    "achieved_tflops",
    "intensity_dram",
    "binding",
    "hot_unit",
    "mfu_pct",
)
SIDE_NAMES = {
    "summed_kernel_us": "summed_kernel_us_per_call",
    "dominant_us": "dominant_us_per_call",
}
CSV_COLUMNS = (
    "stage",
    "op",
    "change",
    "matched_by",
    "kernel_changed",
    "duration_ratio",
    "speed",
    "crossed",
    "why",
    *(f"baseline_{SIDE_NAMES.get(c, c)}" for c in SIDE_COLUMNS),
    *(f"candidate_{SIDE_NAMES.get(c, c)}" for c in SIDE_COLUMNS),
)


def diff_csv(diff: DiffFile) -> str:
    """One row per shape; a missing value is an empty cell, never 0."""
    return csv_text(CSV_COLUMNS, diff_rows(diff))


def diff_parquet(diff: DiffFile) -> bytes:
    """The CSV's rows and columns as Parquet (needs pyarrow)."""
    import pandas as pd

    from .tables import frame_bytes

    frame = pd.DataFrame(diff_rows(diff), columns=list(CSV_COLUMNS))
    return frame_bytes(frame, "parquet")


def diff_rows(diff: DiffFile) -> list[list[object]]:
    """The per-shape rows of the CSV and Parquet forms."""
    rows: list[list[object]] = []
    for shape in diff.shapes:
        row: list[object] = [
            shape.stage,
            shape.op,
            shape.change,
            shape.matched_by,
            shape.kernel_changed,
            shape.duration_ratio,
            shape.speed,
            "; ".join(crossing_text(c) for c in shape.crossings),
            shape.why,
        ]
        for side in (shape.baseline, shape.candidate):
            row += [_side_value(side, c) for c in SIDE_COLUMNS]
        rows.append(row)
    return rows


def _side_value(side: SideFigures | None, column: str) -> object:
    if side is None:
        return None
    if column in SHOWN_METRICS:
        return side.metrics.get(column)
    return getattr(side, column)
