"""`ncu-classify classify` and `reclassify`: reports into a cards file, and a cards file judged
again under other rules (the work is in `verdicts`; this layer checks inputs and outputs before
any work, writes the cards, and prints the summary)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import ReportError, UsageError
from ..core.paths import given_line, short_names
from ..core.text import counted, printable
from ..present.tables import TABLE_SUFFIXES, check_kind, output_format
from .app import (
    CardsArgument,
    OutputOption,
    RulesOption,
    app,
    check_inputs,
    check_output,
    errors,
    examples,
    exit_code_for,
    human,
    read_cards,
    same_target,
    usage,
)
from .options import positive_int
from .terminal import error_line, print_summary, read_progress, warning_line

if TYPE_CHECKING:
    from ..cards.model import CardFile
    from .outputs import Output


@app.command(
    "classify",
    epilog=examples(
        "ncu-classify classify raw/ -o cards.json",
        "ncu-classify classify my_run.ncu-rep -o cards.json --rules my_rules.yaml",
        "ncu-classify classify raw/ -o cards.json --table kernels.csv --table-level kernel",
        "ncu-classify classify raw/shard* -o cards.json   # every shard of a split capture",
    ),
)
def classify_command(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="report files (.ncu-rep, .ncu-repz, .nsight-cuprof-report; .xz/.gz/.bz2) or"
            " folders (searched recursively)"
        ),
    ],
    output: OutputOption,
    rules: RulesOption = None,
    jobs: Annotated[
        int | None,
        typer.Option(help="parallel report readers (default: one per core)", callback=positive_int),
    ] = None,
    table: Annotated[
        str | None,
        typer.Option("--table", help="also write the cards as a table: FILE.csv or FILE.parquet"),
    ] = None,
    table_level: Annotated[
        str, typer.Option("--table-level", help="card (one row per card) or kernel")
    ] = "card",
    noise: Annotated[
        Path | None,
        typer.Option(
            "--noise",
            help="noise YAML whose run_to_run sd widens repeated cards' intervals (default:"
            " measured on H200s)",
            readable=False,
        ),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="accept a split capture (capture --shard) with shards missing: a warning"
            " instead of an error (exit 4)",
        ),
    ] = False,
) -> None:
    """Read reports, classify every kernel, write capability cards and print the summary."""
    from ..cards.files import KernelJson, card_file_text
    from ..core.noise import load_noise
    from ..read.preload import start_loading
    from ..verdicts.classify import classify, input_files
    from ..verdicts.rules import load_rules

    start_loading()  # NVIDIA's metrics library loads while the rules and inputs are read

    if "" in inputs:
        raise usage(UsageError("an input is the empty string; give a report or a folder"))
    paths = [Path(text) for text in inputs]
    if table_level not in ("card", "kernel"):
        raise usage(UsageError(f"--table-level {table_level!r}: expected card or kernel"))
    with errors():
        given = [p for p in (rules, noise) if p]
        read = [*input_files(paths), *given]
        target = check_output(output, read)
        check_inputs(given)
        check_kind(output, "JSON")
        table_target = _check_table(table, read, target) if table is not None else None
        loaded = load_rules(rules)
        tolerances = load_noise(noise)[0]
        made = KernelJson()  # the kernel cards' JSON, made by the readers
        with read_progress() as progress:
            cards = classify(
                paths,
                loaded,
                jobs=jobs,
                progress=progress,
                noise=tolerances,
                partial=partial,
                kernel_json=made,
            )
        named = dict(zip(paths, short_names(paths), strict=True))  # as the cards name them
        for problem in cards.input_errors:
            error_line(given_line(problem, named))
        for warning in cards.input_warnings:
            warning_line(given_line(warning, named))
        if not cards.cards and not cards.input_errors:
            raise ReportError("no kernel among the inputs; nothing written")
        if not cards.cards:  # each bad input has had its line
            raise typer.Exit(exit_code_for(ReportError("")))
        table_bytes = b""
        if table_target is not None and table:  # made first: a table that fails writes nothing
            table_bytes = _table_bytes(table, cards, table_level)
        target.write_text(card_file_text(cards, made))  # before any card could change
        if table_target is not None:
            table_target.write_bytes(table_bytes)
    console = human(target)
    print_summary(cards, console)
    console.print(f"wrote {counted(len(cards.cards), 'card')} to {printable(str(target))}")
    if cards.input_errors:
        raise typer.Exit(exit_code_for(ReportError("")))


def _check_table(given: str, inputs: list[Path], cards_target: Output) -> Output:
    """The checked --table output: a .csv or .parquet file that is not the cards file."""
    output_format(None, given, TABLE_SUFFIXES, None, option="--table")
    checked = check_output(given, inputs, "--table")
    if same_target(checked, cards_target):
        raise UsageError(f"--table {given}: is the cards file of -o; give another file")
    return checked


def _table_bytes(given: str, cards: CardFile, level: str) -> bytes:
    """The cards as a table (frames.cards_frame) in the format the file name asks for."""
    from ..present.frames import cards_frame
    from ..present.tables import frame_bytes

    frame = cards_frame(cards, "kernel" if level == "kernel" else "card")
    fmt = output_format(None, given, TABLE_SUFFIXES, None, option="--table")
    return frame_bytes(frame, "parquet" if fmt == "parquet" else "csv")


@app.command(
    "reclassify",
    epilog=examples(
        "ncu-classify reclassify old_cards.json -o new_cards.json --rules my_rules.yaml",
    ),
)
def reclassify_command(
    cards_file: CardsArgument,
    output: OutputOption,
    rules: RulesOption = None,
) -> None:
    """Re-apply rules to an existing cards file, keeping card and kernel order."""
    from ..cards.files import card_file_text
    from ..verdicts.judge import reclassify
    from ..verdicts.rules import load_rules

    with errors():
        target = check_output(output, [cards_file, *([rules] if rules else [])])
        check_inputs([cards_file, *([rules] if rules else [])])
        check_kind(output, "JSON")
        loaded = load_rules(rules)
        cards = reclassify(read_cards(cards_file), loaded)
        target.write_text(card_file_text(cards))
    console = human(target)
    print_summary(cards, console)
    console.print(f"wrote {counted(len(cards.cards), 'card')} to {printable(str(target))}")
