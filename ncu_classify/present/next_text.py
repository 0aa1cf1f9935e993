"""The `next` advice for people and spreadsheets: Markdown (per stage, then the top moves of
each stage; also what a pull request shows) and CSV (one row per move, every figure). The cells
are shared with the terminal tables (`next_table`). Columns add up as printed: a recoverable
figure is the measured one minus the floor, both as shown (one decimal), so that measured =
at the floor + recoverable in every row; unknown figures are `unknown`, never 0."""

from __future__ import annotations

from ..cards.headroom import StageTotals
from ..core.text import figure, md_code, md_text
from .coverage import UNKNOWN, stage_line
from .next_measured import measured_text
from .next_measured import stage_line as measured_line
from .next_moves import Move, NextMoves
from .tables import csv_text

STAGE_HEADERS = [
    "stage", "cards", "measured", "at kernel roofs", "recoverable at kernel roofs", "at SOL",
    "recoverable at SOL",
]  # fmt: skip
UNKNOWN_TIME = "unknown"  # a row whose every card is untimed: never 0.0
MOVE_HEADERS = [
    "rank", "shape", "class", "hot unit", "measured", "recoverable at kernel roofs",
    "recoverable at SOL", "SOL %", "try",
]  # fmt: skip
MOVE_COLUMNS = [
    "rank", "stage", "group", "op", "calls", "primary", "settled", "hot_unit",
    "measured_us_per_inference", "kernel_roof_us_per_inference",
    "recoverable_at_kernel_roof_us_per_inference", "at_sol_us_per_inference",
    "recoverable_at_sol_us_per_inference", "sol_pct", "measured_us_per_call",
    "kernel_roof_us_per_call", "sol_us_per_call", "at_sol_us_per_call", "sol_bound", "sol_unknown",
    "overhead_us_per_call", "extra_kernels_us_per_call", "try_next", "try_kinds", "flags",
    "ranked_by", "measured_winner", "measured_saving_us_per_inference",
    "measured_saving_ci95_low", "measured_saving_ci95_high", "measured_alternatives",
]  # fmt: skip
INTRO = (
    "Microseconds per inference. At kernel roofs: every kernel at its own binding roof (the"
    " recoverable time is the sum of the kernels' headroom); at SOL (speed of light): the op's"
    " nominal FLOPs at the dense peak of its dtype, or its compulsory bytes at DRAM bandwidth,"
    " whichever is longer. Measured = at the floor + recoverable, in every row."
)


def split(measured: float | None, floor: float | None) -> tuple[str, str]:
    """(floor, recoverable) as printed: the recoverable is the printed measured minus the
    printed floor, so the three add up as shown; `unknown` twice without a floor (or time)."""
    if floor is None or measured is None:
        return "unknown", "unknown"
    shown, at = round(measured, 1), round(floor, 1)
    return figure(at), figure(round(shown - at, 1) + 0.0)


def stage_cells(s: StageTotals) -> list[str]:
    """The cells of one stage row (plain text): stage, cards, measured, at kernel roofs,
    recoverable there, at SOL, recoverable there."""
    cards = f"{s.cards}" + (
        f" ({s.cards_without_figures} untimed)" if s.cards_without_figures else ""
    )
    return [
        s.stage,
        cards,
        UNKNOWN_TIME if s.measured_us is None else figure(s.measured_us),  # every card untimed
        *split(s.measured_us, s.kernel_roof_us),
        *split(s.measured_us, s.at_sol_us),
    ]


def _cards(count: int) -> str:
    """`1 card`, `2 cards`."""
    return f"{count} card" + ("" if count == 1 else "s")


def stage_notes(advice: NextMoves) -> list[str]:
    """What the stage rows count in a way a reader must know: cards at their measured time for
    want of a floor, figures capped at the measured time, kernel roofs below the SOL."""
    lines = []
    for s in advice.stages:  # (all stages) is their sum
        name = s.stage
        if s.cards_without_roof and s.kernel_roof_us is not None:
            lines.append(
                f"{name}: {_cards(s.cards_without_roof)} without a kernel roof: counted at the"
                " measured time at kernel roofs (nothing recoverable claimed)"
            )
        if s.cards_without_sol and s.at_sol_us is not None:
            lines.append(
                f"{name}: {_cards(s.cards_without_sol)} without a SOL: counted at the measured"
                " time at SOL (nothing recoverable claimed)"
            )
        if s.capped_cards:
            lines.append(
                f"{name}: {_cards(s.capped_cards)} capped at the measured time (a kernel above"
                " its roof or an op faster than its SOL: see the flagged figures)"
            )
        if s.cards_below_sol and round(s.below_sol_us, 1) > 0:  # a gap that shows as 0.0: none
            lines.append(
                f"{name}: the kernel roofs of {_cards(s.cards_below_sol)} fall"
                f" {figure(s.below_sol_us)} us below their SOL (fewer DRAM bytes than the"
                " compulsory ones: data in L2): counted at the SOL at kernel roofs"
            )
    totals = {s.stage: s.measured_us for s in advice.stages}
    lines += [measured_line(m, totals.get(m.stage) or 0.0) for m in advice.measured]
    return lines


def coverage_lines(advice: NextMoves) -> list[str]:
    """What share of the recorded program's kernel time these figures cover, per stage (after
    the projection line of a projected file)."""
    projected = [advice.projection] if advice.projection else []
    if not advice.coverage:
        return [*projected, f"coverage: unknown: {advice.coverage_unknown or UNKNOWN}"]
    return [*projected, *(stage_line(stage) for stage in advice.coverage)]


def flag_lines(advice: NextMoves) -> list[str]:
    """One line per card whose figures carry a flag (a kernel above its roof, an op faster
    than its speed of light): what people must not read as a measurement."""
    return [f"{m.group}: {flag}" for m in advice.moves for flag in m.headroom.flags]


def move_cells(m: Move) -> list[str]:
    """The cells of one move (plain text), in MOVE_HEADERS order."""
    klass = m.primary or "-"
    if m.settled:
        klass += f" (settled: {m.settled})"
    if m.light_unchecked:
        klass += f" (captured light: {m.light_unchecked})"
    return [
        str(m.rank),
        m.group,
        klass,
        m.hot_unit or "-",
        figure(m.measured_us),
        *(
            "unknown" if value is None else figure(value)
            for value in (m.recoverable_at_kernel_roof_us, m.recoverable_at_sol_us)
        ),
        "unknown" if m.sol_pct is None else figure(m.sol_pct, "{:.1f} %"),
        m.try_next + (f" | {measured_text(m.measured)}" if m.measured else ""),
    ]


def stage_moves(advice: NextMoves, top: int) -> list[tuple[str, list[Move]]]:
    """The `top` moves of each stage that has any, in the stages' order."""
    per_stage = [
        (s.stage, [m for m in advice.moves if m.stage == s.stage][:top]) for s in advice.stages
    ]
    return [(name, moves) for name, moves in per_stage if moves]


def next_markdown(advice: NextMoves, top: int = 5, *, coverage: bool = True) -> str:
    """Per stage and overall, the share of the program they cover (unless the caller says it
    already), then the `top` moves of each stage (us per inference)."""
    lines = [
        f"## Headroom: {md_text(advice.cards_file)}",
        "",
        INTRO,
        "",
        "| " + " | ".join(STAGE_HEADERS) + " |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in [*advice.stages, advice.overall]:
        cells = stage_cells(s)
        lines.append(f"| {md_text(cells[0])} | {' | '.join(cells[1:])} |")
    notes = stage_notes(advice) + (coverage_lines(advice) if coverage else [])
    if notes:
        lines += ["", *(f"- {md_text(line)}" for line in notes)]
    for name, moves in stage_moves(advice, top):
        lines += [
            "",
            f"### Next moves: {md_text(name)}",
            "",
            "| " + " | ".join(MOVE_HEADERS) + " |",
            "|---:|---|---|---|---:|---:|---:|---:|---|",
        ]
        for m in moves:
            c = move_cells(m)
            text = [md_text(c[0]), md_code(c[1]), *map(md_text, c[2:4]), *c[4:8], md_text(c[8])]
            lines.append("| " + " | ".join(text) + " |")
    flagged = flag_lines(advice)
    if flagged:
        lines += ["", "### Flagged figures", "", *(f"- {md_text(line)}" for line in flagged)]
    return "\n".join(lines) + "\n"


def _measured_cells(m: Move) -> list[object]:
    """ranked_by and what `try` measured (empty where the move was not tried)."""
    found = m.measured
    if found is None:
        return [m.ranked_by, None, None, None, None, None]
    low_high = found.saving_ci95_us or (None, None)
    tried = "; ".join(
        f"{a.label}={a.saving_us}{_uncompared(a.numerics)}"
        if a.saving_us is not None
        else f"{a.label}={a.status}"
        for a in found.alternatives
    )
    return [m.ranked_by, found.winner, found.saving_us, *low_high, tried]


def _uncompared(numerics: str | None) -> str:
    """` (numerics not compared: why)` for an alternative whose output was not compared."""
    return f" ({numerics})" if numerics and "not compared" in numerics else ""


def next_csv(advice: NextMoves) -> str:
    """One row per move, ranked, with the per-call figures beside the per-inference ones, and
    the kinds of its advice (`try_kinds`, in `try_next`'s order)."""
    rows = []
    for m in advice.moves:
        h = m.headroom
        rows.append(
            [
                m.rank, m.stage, m.group, m.op, m.calls, m.primary, m.settled, m.hot_unit,
                m.measured_us, m.kernel_roof_us, m.recoverable_at_kernel_roof_us, m.at_sol_us,
                m.recoverable_at_sol_us, m.sol_pct, h.measured_us, h.kernel_roof_us, h.sol_us,
                h.at_sol_us, h.sol_bound, h.sol_unknown, h.overhead_us, h.extra_kernels_us,
                m.try_next, "; ".join(a.kind for a in m.advice), "; ".join(h.flags),
                *_measured_cells(m),
            ]
        )  # fmt: skip
    return csv_text(MOVE_COLUMNS, rows)
