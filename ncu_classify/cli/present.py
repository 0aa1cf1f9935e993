"""`ncu-classify summary`, `schema` and `metrics`: a cards file summed up per stage or per
shape, the published JSON Schemas, and the metric catalog (the work is in `present` and
`core.metrics`; this layer picks the format and the target)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import UsageError
from ..core.text import printable
from ..present.tables import TABLE_SUFFIXES, TEXT_SUFFIXES, check_kind, csv_text, output_format
from .app import CardsArgument, app, check_inputs, check_output, errors, examples, read_cards, usage
from .terminal import metrics_table, out, print_summary, summary_table_text

if TYPE_CHECKING:
    from ..present.summary import SummaryBy


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
        if target is None:
            out.print(printable(text, keep_newlines=True), end="")
        else:
            target.write_text(text)


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
) -> None:
    """Print (or write) the JSON Schema of the cards file (or of the diff JSON)."""
    from ..present.schema import cards_schema_text, diff_schema_text

    with errors():
        target = check_output(output, [])
        check_kind(output, "JSON")
        target.write_text(diff_schema_text() if diff else cards_schema_text())


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
