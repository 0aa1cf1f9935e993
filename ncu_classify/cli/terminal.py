"""What the CLI shows people: tables, progress bars, per-shape lines; plain text throughout.

Every string that comes from a user's file (groups, stages, kernel names, paths) is printed as
plain text with control characters escaped, never as rich markup: a stage named `model[fp16]`
shows as such, and an escape sequence in a file cannot drive the terminal.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.errors import NcuClassifyError
from ..core.text import counted, one_line, printable
from ..present.fit import Fitted, Line, plain_text

if TYPE_CHECKING:
    from rich.progress import Progress

    from ..capture.manifest import DrillRequest, Manifest
    from ..capture.order import StageShares
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
        what = {"counters": "shapes", "light": "shapes, with the light metric list"}.get(
            batch.kind, "shapes, their repeats (durations)"
        )
        out.print(f"# batch {batch.name}: {len(batch.entries)} {what}")
        for entry in batch.entries:
            out.print(f"#   {printable(entry.group)}")
        out.print(printable(shlex.join(plan.argv[batch.name])))
    total = sum(len(b.entries) for b in plan.batches if b.kind != "times")
    light = sum(len(b.entries) for b in plan.batches if b.kind == "light")
    timed = sum(len(b.entries) for b in plan.batches if b.kind == "times")
    line = f"# {counted(total, 'shape')} to capture, {len(plan.kept)} already captured"
    if light:
        line += f" ({light} with the light list: --light-after {plan.options.light_after_pct:g})"
    if timed:
        line += f"; {timed} shapes to measure {plan.repeat - 1} more times (--repeat {plan.repeat})"
    out.print(line)
    if plan.options.coverage_pct is not None:
        out.print(below_line(plan))
    if plan.drill is not None:
        out.print(drill_line(plan.drill))


def below_line(plan: Plan) -> str:
    """What `--coverage` leaves out of this shard: its shapes below the target, their time."""
    from ..capture.order import program_us

    times = [program_us(e) or 0 for e in plan.below]
    return "# " + target_line(plan.options.coverage_pct or 0, times)


def target_line(target_pct: float, times_us: list[float]) -> str:
    """`--coverage 99.5: 86 shapes below the target, 2.465 ms of the program's kernel time,
    not captured`: the target as given (`:g` wrote 99.99999 as 100), the shapes' count and
    program time."""
    time = sum(times_us) / 1000
    return (
        f"--coverage {str(target_pct).removesuffix('.0')}: {counted(len(times_us), 'shape')}"
        f" below the target, {time:,.3f} ms of the program's kernel time, not captured"
    )


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


def progress_bar(console: Console, text: str, auto_refresh: bool = True) -> Progress:
    """A one-line progress bar: counts first and whole, a bar, then `text` (a format of the
    task, plain text) in what is left of the line, cut with an ellipsis where it is too long
    (rich's own layout cut the counts first on a narrow terminal: `12…` for 1234/25300)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Column

    column = Column(ratio=1, no_wrap=True, overflow="ellipsis")
    return Progress(
        MofNCompleteColumn(),
        BarColumn(bar_width=20),
        TextColumn(text, markup=False, table_column=column),
        console=console,
        transient=False,
        auto_refresh=auto_refresh,
        expand=True,
    )


@contextmanager
def capture_progress(
    shares: StageShares | None = None, before: Iterable[str] = ()
) -> Iterator[Callable[[int, int, str, str], None]]:
    """A progress bar on a terminal's stderr for capture (descriptions are plain text, never
    markup), drawn from the first shape on, so that a refusal before any work stays the only
    line there, with the share of each stage's recorded kernel time the shapes captured so
    far cover (a recording made on a GPU; `before`: those an earlier run captured, on
    --resume), ahead of the long group id that a narrow terminal cuts; each shape counted
    once (a --repeat times batch reports it again); nothing when stderr is a file."""
    if not err.is_terminal:
        yield lambda *_: None
        return
    bar = progress_bar(err, "{task.description}")
    task = bar.add_task("capture", total=None)

    captured = set(before)

    def progress(done: int, total: int, group: str, status: str) -> None:
        if not bar.live.is_started:
            bar.start()
        text = f"{status:6} {group}"
        if shares is not None:
            captured.update([group] if status == "ok" else [])
            text = shares.told(captured) + text
        bar.update(task, completed=done, total=total, description=text)

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
    light = sum(r.status == "ok" and r.light for r in manifest.shapes)
    repeats += f", {light} of them with the light list" if light else ""
    err.print(
        f"ncu-classify: kept {counts['ok']} captured shapes{repeats} ({counts['failed']} failed,"
        f" {counts['pending']} not started) in {printable(str(output))}; rerun with --resume"
        " to finish"
    )


def print_manifest(manifest: Manifest) -> None:
    """What a capture did: each shape's status, each ncu process, what a target left out."""
    for s in manifest.shapes:
        passes = sorted(set(s.replay_passes))
        line = f"{s.status:7} {s.group}  kernels={s.kernels} passes={passes}"
        line += "  light" if s.light else ""
        out.print(printable(line + (f"  ({s.error})" if s.error else "")))
    for b in manifest.batches:
        where = "" if b.gpu is None else f" on GPU {b.gpu}"
        out.print(f"batch {b.name}{where}: ncu exit {b.exit_code}, {b.wall_seconds} s")
        if b.dropped_source_bytes:
            out.print(f"  sources dropped: {b.dropped_source_bytes:,} bytes")
        if b.sources_kept:
            out.print(printable(f"  sources kept: {b.sources_kept}"))
    if manifest.coverage_target_pct is not None:  # what the target left out, as --dry-run
        times = [(b.real_us or 0) * (b.real_calls or b.calls) for b in manifest.below_target]
        out.print(target_line(manifest.coverage_target_pct, times))
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
    with progress_bar(err, "reading reports", auto_refresh=False) as bar:
        task = bar.add_task("read", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            bar.refresh()

        yield update


def summary_table(cards: CardFile, by: SummaryBy = "stage") -> Fitted:
    """The summary as a table whose figures, class names and headers are never cut (present.fit);
    every cell is plain text (a stage named `[b]` stays so)."""
    from ..present.summary import FOLDING, NUMERIC, TITLES, rows_for_people, summary_cells

    names, cells = summary_cells(rows_for_people(cards, by), by, for_people=True)
    keep = [i for i, name in enumerate(names) if not _says_nothing(name, i, names, cells)]
    names, cells = [names[i] for i in keep], [[row[i] for i in keep] for row in cells]
    table = Table(title=TITLES[by])
    # per stage, a row names the stage and its classes follow: a stage column would fold the
    # stage names on a narrow terminal
    grouped = by != "shape" and names[0] == "stage"
    for name in names[1:] if grouped else names:
        table.add_column(name.replace("_", " "), justify="right" if name in NUMERIC else "left")
    stage = None
    for texts in cells:
        if grouped and texts[0] != stage:
            stage = texts[0]
            if stage != "-":  # no stage: coverage unknown for the whole file
                table.add_row(Text(printable(f"[{stage}]"), style="bold", overflow="fold"))
        table.add_row(*(Text(printable(t)) for t in (texts[1:] if grouped else texts)))
    return Fitted(table, fold=[n.replace("_", " ") for n in FOLDING])


def _says_nothing(name: str, index: int, names: list[str], cells: list[list[str]]) -> bool:
    """Whether a summary column says nothing its neighbours do not, so that it stays out of a
    narrow terminal: calls equal to cards (or, per shape, all 1: the time per call is that per
    inference), no untimed card, a status the class implies (a
    class is there: classified or unresolved; none: the class column shows the status), no
    problem, no card measured with --repeat."""
    column = [row[index] for row in cells]
    if name == "calls" and "cards" in names:
        return column == [row[names.index("cards")] for row in cells]
    if name in ("calls", "kernel_us_per_inference") and "kernel_us_per_call" in names:
        return all(row[names.index("calls")] == "1" for row in cells)  # per call = per inference
    if name == "untimed":
        return all(value == "0" for value in column)
    if name == "status":
        classes = [row[names.index("primary")] for row in cells]
        implied = ("classified", "unresolved")
        return all(s == c or s in implied for s, c in zip(column, classes, strict=True))
    return name in ("problem", "stability") and all(value == "-" for value in column)


def print_summary(cards: CardFile, console: Console, by: SummaryBy = "stage") -> None:
    """The summary table, then the lines on what share of the program it covers: on a
    terminal wrapped between words to its width (its own wrap cuts a figure in two), off one
    one line each."""
    from ..present.summary import summary_notes

    console.print(summary_table(cards, by))
    for line in summary_notes(cards, by):
        console.print(Line(one_line(line)))  # text, never markup; wrapped between words


def summary_table_text(cards: CardFile, by: SummaryBy) -> str:
    """The summary table and its coverage lines as plain text, for -o without --csv."""
    return plain_text(lambda console: print_summary(cards, console, by))


def metrics_table(rows: list[list[str]]) -> Fitted:
    """The card metrics as a table (key, unit, ncu names, description); keys and units whole,
    the ncu names and descriptions fold on a narrow terminal."""
    table = Table(title="card metrics (ncu names tried in order; derived ones name their inputs)")
    for name in ("key", "unit", "ncu names", "description"):
        table.add_column(name)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return Fitted(table, fold=("ncu names", "description"))
