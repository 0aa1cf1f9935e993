"""The `next` report for people and spreadsheets: Markdown (per stage, then the top moves of
each stage; also what a pull request shows) and CSV (one row per move, every figure)."""

from __future__ import annotations

from ..cards.headroom import StageTotals
from ..core.text import figure, md_code, md_text
from .coverage import UNKNOWN, stage_line
from .next_moves import Move, NextMoves
from .tables import csv_text

MOVE_COLUMNS = [
    "rank", "stage", "group", "op", "calls", "primary", "settled", "hot_unit", "measured_us",
    "recoverable_at_kernel_roof_us", "recoverable_at_sol_us", "sol_pct", "kernel_roof_us_per_call",
    "sol_us_per_call", "sol_bound", "overhead_us_per_call", "extra_kernels_us_per_call", "try_next",
    "flags",
]  # fmt: skip


def _stage_row(s: StageTotals) -> str:
    sol = figure(s.sol_us) if s.sol_us is not None else f"- ({s.cards_without_sol} without a model)"
    cards = f"{s.cards}" + (
        f" ({s.cards_without_figures} untimed)" if s.cards_without_figures else ""
    )
    return (
        f"| {md_text(s.stage)} | {cards} | {figure(s.measured_us)} | {figure(s.kernel_roof_us)} |"
        f" {figure(s.recoverable_at_kernel_roof_us)} | {sol} | {figure(s.recoverable_at_sol_us)} |"
    )


def _coverage(report: NextMoves) -> list[str]:
    """What share of the recorded program's kernel time these figures cover, per stage."""
    if not report.coverage:
        return [f"coverage: unknown: {UNKNOWN}"]
    return [stage_line(stage) for stage in report.coverage]


def flag_lines(report: NextMoves) -> list[str]:
    """One line per card whose figures carry a flag (a kernel above its roof, an op faster
    than its speed of light): what people must not read as a measurement."""
    return [f"{m.group}: {flag}" for m in report.moves for flag in m.headroom.flags]


def _move_row(m: Move) -> str:
    klass = m.primary or "-"
    if m.settled:
        klass += f" (settled: {m.settled})"
    return (
        f"| {m.rank} | {md_code(m.group)} | {md_text(klass)} | {md_text(m.hot_unit or '-')} |"
        f" {figure(m.measured_us)} | {figure(m.recoverable_at_kernel_roof_us)} |"
        f" {figure(m.recoverable_at_sol_us)} | {figure(m.sol_pct, '{:.1f} %')} |"
        f" {md_text(m.try_next)} |"
    )


def next_markdown(report: NextMoves, top: int = 5, *, coverage: bool = True) -> str:
    """Per stage and overall, the share of the program they cover (unless the caller says it
    already), then the `top` moves of each stage (us per inference)."""
    lines = [
        f"## Headroom: {md_text(report.cards_file)}",
        "",
        "Microseconds per inference. Kernel roof: every kernel at its own binding roof; speed of"
        " light (SOL): the op's nominal FLOPs at the dense peak of its dtype, or its compulsory"
        " bytes at DRAM bandwidth, whichever is longer.",
        "",
        "| stage | cards | measured | at kernel roofs | recoverable there | at SOL |"
        " recoverable there |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *map(_stage_row, [*report.stages, report.overall]),
    ]
    if coverage:
        lines += ["", *(f"- {md_text(line)}" for line in _coverage(report))]
    for stage in report.stages:
        moves = [m for m in report.moves if m.stage == stage.stage][:top]
        if not moves:
            continue
        lines += [
            "",
            f"### Next moves: {md_text(stage.stage)}",
            "",
            "| rank | shape | class | hot unit | measured | recoverable at kernel roof |"
            " recoverable at SOL | SOL % | try |",
            "|---:|---|---|---|---:|---:|---:|---:|---|",
            *map(_move_row, moves),
        ]
    flagged = flag_lines(report)
    if flagged:
        lines += ["", "### Flagged figures", "", *(f"- {md_text(line)}" for line in flagged)]
    return "\n".join(lines) + "\n"


def next_csv(report: NextMoves) -> str:
    """One row per move, ranked, with the per-call figures beside the per-inference ones."""
    rows = []
    for m in report.moves:
        h = m.headroom
        rows.append(
            [
                m.rank,
                m.stage,
                m.group,
                m.op,
                m.calls,
                m.primary,
                m.settled,
                m.hot_unit,
                m.measured_us,
                m.recoverable_at_kernel_roof_us,
                m.recoverable_at_sol_us,
                m.sol_pct,
                h.kernel_roof_us,
                h.sol_us,
                h.sol_bound,
                h.overhead_us,
                h.extra_kernels_us,
                m.try_next,
                "; ".join(h.flags),
            ]
        )
    return csv_text(MOVE_COLUMNS, rows)
