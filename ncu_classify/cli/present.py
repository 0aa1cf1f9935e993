"""`ncu-classify summary`, `schema` and `metrics`: a cards file summed up per stage or per
shape, the published JSON Schemas, and the metric catalog (the work is in `present` and
`core.metrics`; this layer picks the format and the target)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import UsageError
from ..core.paths import short_names
from ..core.text import printable
from ..present.fit import on_terminal
from ..present.tables import TABLE_SUFFIXES, TEXT_SUFFIXES, check_kind, csv_text, output_format
from .app import CardsArgument, app, check_inputs, check_output, errors, examples, read_cards, usage
from .options import positive_int
from .terminal import metrics_table, out, print_summary, summary_table_text, warning_line

if TYPE_CHECKING:
    from ..present.summary import SummaryBy
    from ..tries.results import TryResults
    from .outputs import Output


@app.command(
    "summary",
    epilog=examples(
        "ncu-classify summary cards.json",
        "ncu-classify summary cards.json --by kernel",
        "ncu-classify summary cards.json --by shape --csv -o shapes.csv",
        "ncu-classify summary cards.json --by coverage",
        "ncu-classify summary cards.json --by fidelity --csv -o fidelity.csv",
    ),
)
def summary_command(
    cards_file: CardsArgument,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="stage: card classes per stage; kernel: each kernel's own class per stage;"
            " shape: one row per card; coverage: the recorded program's kernel time per stage"
            " the cards cover, and what they do not; fidelity: each timed card's replay against"
            " the program's own time (the table: those more than 10 % off; CSV: all)",
        ),
    ] = "stage",
    csv: Annotated[bool, typer.Option("--csv", help="CSV instead of a table")] = False,
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", help="write to this file instead (.parquet: Parquet)"),
    ] = None,
) -> None:
    """Per-stage counts of primary classes and their share of summed kernel time, per-shape
    verdicts with the reason of every failed shape, the recorded program's coverage, or replay
    fidelity; a table for people ends with what share of the program's kernel time it covers."""
    from ..present.summary import SUMMARY_VIEWS, summarize, summary_csv, summary_parquet

    if by not in SUMMARY_VIEWS:
        expected = ", ".join(SUMMARY_VIEWS[:-1]) + f" or {SUMMARY_VIEWS[-1]}"
        raise usage(UsageError(f"--by {by!r}: expected {expected}"))
    grouping: SummaryBy = by  # narrowed by the check just above
    with errors():
        target = check_output(output, [cards_file]) if output is not None else None
        check_inputs([cards_file])
        given = "csv" if csv else None
        fmt = output_format(given, output, TABLE_SUFFIXES, "table", neutral=TEXT_SUFFIXES)
        cards = read_cards(cards_file)
        if target is None and fmt == "table":
            print_summary(cards, out, grouping)
            return
        rows = summarize(cards, grouping)
        if fmt == "parquet":
            if target is None or target.is_stdout:
                raise UsageError("Parquet is a binary file: give it with -o FILE.parquet")
            target.write_bytes(summary_parquet(rows, grouping))
            return
        text = summary_csv(rows, grouping) if fmt == "csv" else summary_table_text(cards, grouping)
        _write(text, target)


@app.command(
    "schema",
    epilog=examples(
        "ncu-classify schema -o cards.schema.json",
        "ncu-classify schema --diff",
    ),
)
def schema_command(
    output: Annotated[str, typer.Option("-o", "--output", help="file to write")] = "-",
    diff: Annotated[bool, typer.Option("--diff", help="schema of `diff --format json`")] = False,
    next_: Annotated[bool, typer.Option("--next", help="schema of `next -o F.json`")] = False,
) -> None:
    """Print (or write) the JSON Schema of the cards file (or of the diff or next JSON)."""
    from ..present.schema import cards_schema_text, diff_schema_text, next_schema_text

    with errors():
        if diff and next_:
            raise UsageError("--diff and --next: give one")
        target = check_output(output, [])
        check_kind(output, "JSON")
        text = diff_schema_text() if diff else next_schema_text() if next_ else cards_schema_text()
        target.write_text(text)


@app.command(
    "next",
    epilog=examples(
        "ncu-classify next cards.json",
        "ncu-classify next cards.json --stage vae --top 10",
        "ncu-classify next cards.json -o next.json",
        "ncu-classify next cards.json -o next.md",
        "ncu-classify next cards.json --tries tries_vae/tries.json --tries tries_dit/tries.json",
    ),
)
def next_command(
    cards_file: CardsArgument,
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            help="write to this file: .json (every move), .md (Markdown), .csv; else the tables",
        ),
    ] = None,
    top: Annotated[
        int, typer.Option(help="moves shown per stage (Markdown, terminal)", callback=positive_int)
    ] = 5,
    stage: Annotated[
        list[str] | None, typer.Option("--stage", help="only this stage (repeatable)")
    ] = None,
    tries: Annotated[
        list[Path] | None,
        typer.Option(
            "--tries",
            help="a `try` result (tries.json): its moves ranked and shown as measured (repeatable)",
        ),
    ] = None,
) -> None:
    """How much time is left on the table: per stage, the kernel time at every kernel's own
    roof and at each op's speed of light, and the next moves ranked by the microseconds per
    inference they could recover, each with what to try."""
    from ..present.next_measured import tries_notes
    from ..present.next_moves import next_moves
    from ..present.next_table import next_renderable, next_table_text
    from ..present.next_text import flag_lines, next_csv, next_markdown

    with errors():
        target = check_output(output, [cards_file]) if output is not None else None
        check_inputs([cards_file])
        suffixes = {".json": "json", ".md": "md", ".csv": "csv"}
        fmt = output_format(
            None, output, suffixes, "table", neutral=TEXT_SUFFIXES, has_format=False
        )
        cards = read_cards(cards_file)
        known = {c.stage for c in cards.cards}
        for name in stage or []:
            if name not in known:
                raise UsageError(f"--stage {name!r}: {cards_file} has no such stage")
        measured = read_tries(tries or [])
        label = short_names([cards_file])[0]
        advice = next_moves(cards, label, stage or [], measured)
        calls = {c.group: c.calls for c in cards.cards}
        for line in [*tries_notes(calls, label, set(stage or []), measured), *flag_lines(advice)]:
            warning_line(line)
        if target is None and fmt == "table" and on_terminal(out):
            out.print(next_renderable(advice, top))
            return
        if fmt == "json":
            text = advice.model_dump_json(indent=2) + "\n"
        elif fmt == "table":
            text = next_table_text(advice, top)
        else:
            text = next_csv(advice) if fmt == "csv" else next_markdown(advice, top)
        _write(text, target)


@app.command(
    "metrics",
    epilog=examples(
        "ncu-classify metrics --csv",
    ),
)
def metrics_command(
    csv: Annotated[bool, typer.Option("--csv", help="CSV instead of a table")] = False,
) -> None:
    """List the card metrics: key, unit, and the ncu names tried in order."""
    from ..core.metrics import metric_rows

    rows = metric_rows()
    if csv:
        out.print(csv_text(["key", "unit", "ncu_names", "description"], rows), end="")
        return
    out.print(metrics_table(rows))


def read_tries(paths: list[Path]) -> list[tuple[str, TryResults]]:
    """The `try` results `next --tries` reads, each under its short name."""
    from ..tries.results import check_not_folder, load_results

    for path in paths:
        check_not_folder(path)
    check_inputs(paths)
    return list(zip(short_names(paths), map(load_results, paths), strict=True))


def _write(text: str, target: Output | None) -> None:
    """`text` to the -o file, or to stdout with the user's strings made printable."""
    if target is None:
        out.print(printable(text, keep_newlines=True), end="")
    else:
        target.write_text(text)
