"""What the CLI shows people: tables, progress bars, per-shape lines; plain text throughout.

Every string that comes from a user's file (groups, stages, kernel names, paths) is printed as
plain text with control characters escaped, never as rich markup: a stage named `model[fp16]`
shows as such, and an escape sequence in a file cannot drive the terminal.
"""

from __future__ import annotations

import io
import shlex
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.errors import NcuClassifyError
from ..core.text import counted, one_line, printable

if TYPE_CHECKING:
    from ..capture.drill import DrillRequest
    from ..capture.manifest import Manifest
    from ..capture.plan import Plan
    from ..cards.model import CardFile
    from ..present.summary import SummaryBy

err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)


def error_line(message: str) -> None:
    """One `ncu-classify: error: ...` line on stderr, control characters shown escaped."""
    err.print(f"ncu-classify: error: {one_line(message)}")


def warning_line(message: str) -> None:
    """One `ncu-classify: warning: ...` line on stderr."""
    err.print(f"ncu-classify: warning: {one_line(message)}")


def print_plan(plan: Plan) -> None:
    for batch in plan.batches:
        what = "shapes" if batch.kind == "counters" else "shapes, their repeats (durations)"
        out.print(f"# batch {batch.name}: {len(batch.entries)} {what}")
        for entry in batch.entries:
            out.print(f"#   {printable(entry.group)}")
        out.print(printable(shlex.join(plan.argv[batch.name])))
    total = sum(len(b.entries) for b in plan.batches if b.kind == "counters")
    timed = sum(len(b.entries) for b in plan.batches if b.kind == "times")
    line = f"# {counted(total, 'shape')} to capture, {len(plan.kept)} already captured"
    if timed:
        line += f"; {timed} shapes to measure {plan.repeat - 1} more times (--repeat {plan.repeat})"
    out.print(line)
    if plan.drill is not None:
        out.print(drill_line(plan.drill))


def drill_line(drill: DrillRequest) -> str:
    """What a drill-down was asked for, in one line: its cards file, the reasons, the shapes
    the shapes file lacked."""
    reasons = Counter(why for why in drill.selected.values())
    told = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
    chosen = counted(len(drill.selected), "shape")
    line = f"# drill-down of {printable(drill.cards_file)}: {chosen} ({told})"
    if drill.not_in_shapes:
        line += f"; {len(drill.not_in_shapes)} not in the shapes file (first: "
        line += f"{printable(drill.not_in_shapes[0])})"
    return line


@contextmanager
def capture_progress() -> Iterator[Callable[[int, int, str, str], None]]:
    """A progress bar on a terminal's stderr for capture (descriptions are plain text, never
    markup), drawn from the first shape on, so that a refusal before any work stays the only
    line there; nothing when stderr is a file."""
    if not err.is_terminal:
        yield lambda *_: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=False,
    )
    task = bar.add_task("capture", total=None)

    def progress(done: int, total: int, group: str, status: str) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total, description=f"{status:6} {group}")

    try:
        yield progress
    finally:
        if bar.live.is_started:
            bar.stop()


def print_interrupted(output: Path) -> None:
    """What an interrupted capture kept, and how to finish it."""
    from ..capture.manifest import MANIFEST_NAME, read_manifest

    try:
        manifest = read_manifest(output / MANIFEST_NAME)
    except NcuClassifyError:
        return
    counts = {s: sum(r.status == s for r in manifest.shapes) for s in ("ok", "failed", "pending")}
    untimed = sum(
        r.status == "ok" and r.times_status in ("pending", "failed") for r in manifest.shapes
    )
    repeats = f", {untimed} of them without their repeats yet" if untimed else ""
    err.print(
        f"ncu-classify: kept {counts['ok']} captured shapes{repeats} ({counts['failed']} failed,"
        f" {counts['pending']} not started) in {printable(str(output))}; rerun with --resume"
        " to finish"
    )


def print_manifest(manifest: Manifest) -> None:
    for s in manifest.shapes:
        passes = sorted(set(s.replay_passes))
        line = f"{s.status:7} {s.group}  kernels={s.kernels} passes={passes}"
        out.print(printable(line + (f"  ({s.error})" if s.error else "")))
    for b in manifest.batches:
        where = "" if b.gpu is None else f" on GPU {b.gpu}"
        out.print(f"batch {b.name}{where}: ncu exit {b.exit_code}, {b.wall_seconds} s")
        if b.dropped_source_bytes:
            out.print(f"  sources dropped: {b.dropped_source_bytes:,} bytes")
        if b.sources_kept:
            out.print(printable(f"  sources kept: {b.sources_kept}"))
    if manifest.drill_down is not None:
        out.print(drill_line(manifest.drill_down).removeprefix("# "))


@contextmanager
def read_progress() -> Iterator[Callable[[int, int], None] | None]:
    """Progress of report reading on a terminal's stderr; nothing when stderr is a file. Drawn
    from the callback, without rich's refresh thread: the readers are forked, and a process
    with other threads reads in-process instead (fork is unsafe there)."""
    if not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("reading reports"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        auto_refresh=False,
    ) as bar:
        task = bar.add_task("read", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            bar.refresh()

        yield update


def summary_table(cards: CardFile, by: SummaryBy = "stage") -> Table:
    """The summary as a rich table; every cell is plain text (a stage named `[b]` stays so)."""
    from ..present.summary import NUMERIC, TITLES, rows_for_people, summary_cells

    names, cells = summary_cells(rows_for_people(cards, by), by, for_people=True)
    keep = [i for i, name in enumerate(names) if not _says_nothing(name, i, names, cells)]
    names, cells = [names[i] for i in keep], [[row[i] for i in keep] for row in cells]
    table = Table(title=TITLES[by])
    # per stage, a row names the stage and its classes follow: a stage column would fold the
    # stage names at 80 columns; class names and figures are never cut
    grouped = by != "shape" and names[0] == "stage"
    for name in names[1:] if grouped else names:
        numeric = name in NUMERIC
        table.add_column(  # headers a word a line, so that figures need not be cut
            name.replace("_", "\n") if numeric else name.replace("_", " "),
            justify="right" if numeric else "left",
            overflow="fold",
            no_wrap=numeric or name == "primary",
        )
    stage = None
    for texts in cells:
        if grouped and texts[0] != stage:
            stage = texts[0]
            if stage != "-":  # no stage: coverage unknown for the whole file
                table.add_row(Text(printable(f"[{stage}]"), style="bold", overflow="fold"))
        table.add_row(*(Text(printable(t)) for t in (texts[1:] if grouped else texts)))
    return table


def _says_nothing(name: str, index: int, names: list[str], cells: list[list[str]]) -> bool:
    """Whether a summary column says nothing its neighbours do not, so that it stays out of a
    narrow terminal: calls equal to cards, no untimed card, a status the class implies (a
    class is there: classified or unresolved; none: the class column shows the status), no
    problem."""
    column = [row[index] for row in cells]
    if name == "calls" and "cards" in names:
        return column == [row[names.index("cards")] for row in cells]
    if name == "untimed":
        return all(value == "0" for value in column)
    if name == "status":
        classes = [row[names.index("primary")] for row in cells]
        implied = ("classified", "unresolved")
        return all(s == c or s in implied for s, c in zip(column, classes, strict=True))
    return name == "problem" and all(value == "-" for value in column)


def print_summary(cards: CardFile, console: Console, by: SummaryBy = "stage") -> None:
    """The summary table, then the lines on what share of the program it covers."""
    from ..present.summary import summary_notes

    console.print(summary_table(cards, by))
    for line in summary_notes(cards, by):
        console.print(Text(one_line(line)), soft_wrap=True)  # text, never markup


def summary_table_text(cards: CardFile, by: SummaryBy) -> str:
    """The summary table and its coverage lines as plain text, for -o without --csv."""
    buffer = io.StringIO()
    print_summary(cards, Console(file=buffer, width=200, color_system=None), by)
    return buffer.getvalue()


def metrics_table(rows: list[list[str]]) -> Table:
    """The card metrics as a table (key, unit, ncu names, description)."""
    table = Table(title="card metrics (ncu names tried in order; derived ones name their inputs)")
    for name in ("key", "unit", "ncu names", "description"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table
