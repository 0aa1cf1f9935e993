"""The `ncu-classify` command: a thin typer layer over the library.

Exit codes (also in the README):
  0   success
  1   internal error (a bug): one line, the traceback with NCU_CLASSIFY_DEBUG=1
  2   usage error (no command, a bad option or argument, an output that would destroy
      something or whose suffix names a format the command does not write)
  3   an input file is invalid (shapes, rules, cards, noise, manifest): nothing was written
  4   some reports could not be read: the cards of the others were written
  5   some shapes failed to capture: the rest were captured and the manifest says why
  6   the environment lacks something the command needs (GPU, ncu, counter permission;
      pyarrow for Parquet)
  7   an output could not be written (permission, full disk): nothing partial was left
  8   `diff --fail-on`: a guarded condition holds (the comparison was still written)
  130 interrupted
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from ..core.errors import CaptureError, OutputError, ReportError, UsageError
from ..core.text import printable
from ..present.tables import TABLE_SUFFIXES, TEXT_SUFFIXES, check_kind, output_format
from . import compare, record  # noqa: F401  (register diff, report, record)
from .app import (
    EXIT_CODES,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    OutputOption,
    RulesOption,
    app,
    check_inputs,
    check_output,
    errors,
    exit_code_for,
    human,
    read_cards,
    same_target,
    usage,
)
from .interrupts import sigterm_as_interrupt
from .options import parse_gpus, parse_shard, positive_float, positive_int
from .streams import forgiving_std_streams
from .terminal import (
    capture_progress,
    err,
    error_line,
    metrics_table,
    out,
    print_interrupted,
    print_manifest,
    print_plan,
    print_summary,
    read_progress,
    table_text,
    warning_line,
)

if TYPE_CHECKING:
    from ..cards.model import CardFile
    from .outputs import Output

__all__ = ["EXIT_CODES", "app", "main", "run"]


@app.command()
def capture(
    shapes: Annotated[Path, typer.Option("--shapes", help="shapes YAML file")],
    output: Annotated[Path, typer.Option("-o", "--output", help="folder for reports + manifest")],
    ncu: Annotated[str, typer.Option(help="ncu executable")] = "ncu",
    timeout: Annotated[
        float, typer.Option(help="seconds allowed per ncu process", callback=positive_float)
    ] = 3600.0,
    gpus: Annotated[str, typer.Option(help="CUDA devices to spread batches over, e.g. 0,1")] = "",
    shard: Annotated[str, typer.Option(help="capture only shard K of N (K/N), e.g. 2/8")] = "1/1",
    max_batch: Annotated[
        int | None,
        typer.Option(help="at most this many shapes per ncu process", callback=positive_int),
    ] = None,
    per_stage: Annotated[
        bool,
        typer.Option(
            "--per-stage/--one-process",
            help="one ncu process per stage, or one for all shapes (one per GPU with --gpus)",
        ),
    ] = True,
    resume: Annotated[bool, typer.Option(help="finish a capture: only shapes not yet ok")] = False,
    stop_grace: Annotated[
        float,
        typer.Option(
            help="on Ctrl-C/SIGTERM, seconds the shape in hand may take before it is killed",
            callback=positive_float,
        ),
    ] = 20.0,
    dry_run: Annotated[bool, typer.Option(help="print the ncu command lines, run nothing")] = False,
) -> None:
    """Replay every shape under ncu into OUTPUT (reports + manifest.json)."""
    from ..capture.run import CaptureOptions, plan_capture
    from ..capture.run import capture as run_capture
    from .outputs import output_folder

    options = CaptureOptions(
        ncu=ncu,
        timeout_s=timeout,
        gpus=parse_gpus(gpus),
        shard=parse_shard(shard),
        max_batch=max_batch or 0,
        resume=resume,
        per_stage=per_stage,
        stop_grace_s=stop_grace,
    )
    with errors():
        output_folder(output)
        plan = plan_capture(shapes, output, options)  # a bad file fails before any display
    if dry_run:
        print_plan(plan)
        return
    try:
        with errors(), capture_progress() as progress:
            manifest = run_capture(shapes, output, options, progress=progress)
    except typer.Exit as stopped:
        if stopped.exit_code == EXIT_INTERRUPTED:
            print_interrupted(output)
        raise
    print_manifest(manifest)
    failed = [s for s in manifest.shapes if s.status != "ok"]
    if failed:
        with errors():
            raise CaptureError(
                f"{len(failed)} of {len(manifest.shapes)} shapes failed;"
                f" see {output / 'manifest.json'}"
            )


@app.command()
def classify(
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
) -> None:
    """Read reports, classify every kernel, write capability cards and print the summary."""
    from ..cards.files import card_file_text
    from ..verdicts.classify import classify as run_classify
    from ..verdicts.classify import input_files
    from ..verdicts.rules import load_rules

    if "" in inputs:
        raise usage(UsageError("an input is the empty string; give a report or a folder"))
    paths = [Path(text) for text in inputs]
    if table_level not in ("card", "kernel"):
        raise usage(UsageError(f"--table-level {table_level!r}: expected card or kernel"))
    with errors():
        read = [*input_files(paths), *([rules] if rules else [])]
        target = check_output(output, read)
        check_inputs([rules] if rules else [])
        check_kind(output, "JSON")
        table_target = _check_table(table, read, target) if table is not None else None
        loaded = load_rules(rules)
        with read_progress() as progress:
            cards = run_classify(paths, loaded, jobs=jobs, progress=progress)
        for problem in cards.input_errors:
            error_line(problem)
        for warning in cards.input_warnings:
            warning_line(warning)
        if not cards.cards and not cards.input_errors:
            raise ReportError("no kernel among the inputs; nothing written")
        if not cards.cards:  # each bad input has had its line
            raise typer.Exit(exit_code_for(ReportError("")))
        table_bytes = b""
        if table_target is not None and table:  # made first: a table that fails writes nothing
            table_bytes = _table_bytes(table, cards, table_level)
        target.write_text(card_file_text(cards))
        if table_target is not None:
            table_target.write_bytes(table_bytes)
    console = human(target)
    print_summary(cards, console)
    console.print(f"wrote {len(cards.cards)} cards to {printable(str(target))}")
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


@app.command()
def reclassify(
    cards_file: Annotated[
        Path, typer.Argument(help="cards JSON (ours or the legacy format)", readable=False)
    ],
    output: OutputOption,
    rules: RulesOption = None,
) -> None:
    """Re-apply rules to an existing cards file, keeping card and kernel order."""
    from ..cards.files import card_file_text
    from ..verdicts.judge import reclassify as run_reclassify
    from ..verdicts.rules import load_rules

    with errors():
        target = check_output(output, [cards_file, *([rules] if rules else [])])
        check_inputs([cards_file, *([rules] if rules else [])])
        check_kind(output, "JSON")
        loaded = load_rules(rules)
        cards = run_reclassify(read_cards(cards_file), loaded)
        target.write_text(card_file_text(cards))
    console = human(target)
    print_summary(cards, console)
    console.print(f"wrote {len(cards.cards)} cards to {printable(str(target))}")


@app.command()
def summary(
    cards_file: Annotated[
        Path, typer.Argument(help="cards JSON (ours or the legacy format)", readable=False)
    ],
    by: Annotated[
        str, typer.Option("--by", help="stage: classes per stage; shape: one row per card")
    ] = "stage",
    csv: Annotated[bool, typer.Option("--csv", help="CSV instead of a table")] = False,
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", help="write to this file instead (.parquet: Parquet)"),
    ] = None,
) -> None:
    """Per-stage counts of primary classes and their share of summed kernel time, or per-shape
    verdicts with the reason of every failed shape."""
    from ..present.summary import summarize, summary_csv, summary_parquet

    if by not in ("stage", "shape"):
        raise usage(UsageError(f"--by {by!r}: expected stage or shape"))
    grouping: Literal["stage", "shape"] = "stage" if by == "stage" else "shape"
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
        text = summary_csv(rows, grouping) if fmt == "csv" else table_text(cards, grouping)
        if target is None:
            out.print(printable(text, keep_newlines=True), end="")
        else:
            target.write_text(text)


@app.command()
def schema(
    output: Annotated[str, typer.Option("-o", "--output", help="file to write")] = "-",
    diff: Annotated[bool, typer.Option("--diff", help="schema of `diff --format json`")] = False,
) -> None:
    """Print (or write) the JSON Schema of the cards file (or of the diff JSON)."""
    from ..present.schema import cards_schema_text, diff_schema_text

    with errors():
        target = check_output(output, [])
        check_kind(output, "JSON")
        target.write_text(diff_schema_text() if diff else cards_schema_text())


@app.command()
def metrics(
    csv: Annotated[bool, typer.Option("--csv", help="CSV instead of a table")] = False,
) -> None:
    """List the card metrics: key, unit, and the ncu names tried in order."""
    from ..core.metrics import metric_rows

    rows = metric_rows()
    if csv:
        import csv as csv_module

        buffer = io.StringIO()
        writer = csv_module.writer(buffer, lineterminator="\n")
        writer.writerow(["key", "unit", "ncu_names", "description"])
        writer.writerows(rows)
        out.print(buffer.getvalue(), end="")
        return
    out.print(metrics_table(rows))


def main() -> None:
    """Console-script entry point."""
    sys.exit(run(sys.argv[1:]))


def run(argv: list[str]) -> int:
    """Run the CLI with `argv` and return its exit code. Every way out is one line on stderr
    and a documented code: usage errors (2), library errors, Ctrl-C (130), a full or closed
    stdout (7; a reader that leaves the pipe is no error), and any bug (1;
    NCU_CLASSIFY_DEBUG=1 shows its traceback)."""
    if sys.stdout is None:  # started with stdout closed: print nowhere, fail only `-o -`
        from . import outputs

        outputs.STDOUT_CLOSED = True
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    try:
        # SIGTERM unwinds like Ctrl-C in every command (exit 130); a reader that leaves the
        # pipe (`| head`) leaves the command its own exit code
        with sigterm_as_interrupt(), forgiving_std_streams():
            result = app(argv, standalone_mode=False, prog_name="ncu-classify")
    except KeyboardInterrupt:
        err.print("ncu-classify: interrupted")
        return EXIT_INTERRUPTED
    except OSError as exc:  # the terminal or a pipe refused what we printed (/dev/full)
        error_line(f"cannot write to standard output or error: {exc.strerror or exc}")
        return exit_code_for(OutputError(""))
    except Exception as exc:
        if _is_click_error(exc) and type(exc).__name__ == "NoArgsIsHelpError":
            out.print(exc.ctx.get_help())  # type: ignore[attr-defined]  # no command: the help
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if _is_click_error(exc):
            error_line(f"{exc.format_message()} (see --help)")  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":
            err.print("ncu-classify: interrupted")
            return EXIT_INTERRUPTED
        if os.environ.get("NCU_CLASSIFY_DEBUG"):
            raise
        error_line(
            f"internal error: {type(exc).__name__}: {exc} (a bug: rerun with"
            " NCU_CLASSIFY_DEBUG=1 for the traceback and report it)"
        )
        return EXIT_INTERNAL
    return result if isinstance(result, int) else 0


def _is_click_error(exc: BaseException) -> bool:
    """A usage error raised by typer's click (bundled or not): it knows its exit code."""
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__)


if __name__ == "__main__":
    main()
