"""The `ncu-classify` command: a thin typer layer over the library.

Exit codes (also in the README):
  0  success
  2  usage error (bad option or argument)
  3  an input file is invalid (shapes, rules, cards, manifest): nothing was written
  4  some reports could not be read: the cards of the others were written
  5  some shapes failed to capture: the rest were captured and the manifest says why
  6  the environment lacks something capture needs (GPU, ncu, counter permission)
  130 interrupted
"""

from __future__ import annotations

import re
import shlex
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from .errors import (
    CaptureError,
    EnvironmentProblem,
    InputFileError,
    NcuClassifyError,
    ReportError,
)

if TYPE_CHECKING:
    from .cards import CardFile

EXIT_CODES: list[tuple[type[NcuClassifyError], int]] = [
    (InputFileError, 3),
    (ReportError, 4),
    (CaptureError, 5),
    (EnvironmentProblem, 6),
]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="What bounds each GPU kernel, from Nsight Compute hardware counters.",
)
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def exit_code_for(exc: NcuClassifyError) -> int:
    """The documented exit code of a library error."""
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return 1


@contextmanager
def _errors() -> Iterator[None]:
    """Turn library errors into one line on stderr and their exit code; no traceback."""
    try:
        yield
    except NcuClassifyError as exc:
        err.print(f"ncu-classify: error: {exc}", markup=False)
        raise typer.Exit(exit_code_for(exc)) from None
    except KeyboardInterrupt:
        err.print("ncu-classify: interrupted", markup=False)
        raise typer.Exit(130) from None


@app.callback()
def root() -> None:
    """What bounds each GPU kernel, from Nsight Compute hardware counters."""


def _parse_gpus(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected CUDA device indices such as 0,1") from None


def _parse_shard(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or int(match.group(2)) < 1:
        raise typer.BadParameter(f"{text!r}: expected K/N, e.g. 1/4")
    return int(match.group(1)), int(match.group(2))


@app.command()
def capture(
    shapes: Annotated[Path, typer.Option("--shapes", help="shapes YAML file")],
    output: Annotated[Path, typer.Option("-o", "--output", help="folder for reports + manifest")],
    ncu: Annotated[str, typer.Option(help="ncu executable")] = "ncu",
    timeout: Annotated[float, typer.Option(help="seconds allowed per ncu process")] = 3600.0,
    gpus: Annotated[str, typer.Option(help="CUDA devices to spread batches over, e.g. 0,1")] = "",
    shard: Annotated[str, typer.Option(help="capture only shard K of N (K/N), e.g. 2/8")] = "1/1",
    max_batch: Annotated[int, typer.Option(help="at most this many shapes per ncu process")] = 0,
    per_stage: Annotated[
        bool,
        typer.Option(
            "--per-stage/--one-process",
            help="one ncu process per stage, or one for all shapes (one per GPU with --gpus)",
        ),
    ] = True,
    resume: Annotated[bool, typer.Option(help="finish a capture: only shapes not yet ok")] = False,
    dry_run: Annotated[bool, typer.Option(help="print the ncu command lines, run nothing")] = False,
) -> None:
    """Replay every shape under ncu (one process per stage) into OUTPUT, with a manifest."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .capture import CaptureOptions, plan_capture
    from .capture import capture as run_capture

    options = CaptureOptions(
        ncu=ncu,
        timeout_s=timeout,
        gpus=_parse_gpus(gpus),
        shard=_parse_shard(shard),
        max_batch=max_batch,
        resume=resume,
        per_stage=per_stage,
    )
    with _errors():
        plan = plan_capture(shapes, output, options)  # a bad file fails before any display
    if dry_run:
        for batch in plan.batches:
            out.print(f"# batch {batch.name}: {len(batch.entries)} shapes", markup=False)
            for entry in batch.entries:
                out.print(f"#   {entry.group}", markup=False)
            out.print(shlex.join(plan.argv[batch.name]), markup=False)
        out.print(
            f"# {sum(len(b.entries) for b in plan.batches)} shapes to capture,"
            f" {len(plan.kept)} already captured",
            markup=False,
        )
        return
    # SIGTERM (a scheduler's kill) unwinds like Ctrl-C: ncu is stopped, the manifest kept.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with (
        _errors(),
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err,
            transient=False,
        ) as bar,
    ):
        task = bar.add_task("capture", total=None)

        def progress(done: int, total: int, group: str, status: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{status:6} {group}")

        manifest = run_capture(shapes, output, options, progress=progress)
    failed = [s for s in manifest.shapes if s.status != "ok"]
    for s in manifest.shapes:
        passes = sorted(set(s.replay_passes))
        out.print(
            f"{s.status:6} {s.group}  kernels={s.kernels} passes={passes}"
            + (f"  ({s.error})" if s.error else ""),
            markup=False,
        )
    for b in manifest.batches:
        where = "" if b.gpu is None else f" on GPU {b.gpu}"
        out.print(
            f"batch {b.name}{where}: ncu exit {b.exit_code}, {b.wall_seconds} s", markup=False
        )
    if failed:
        with _errors():
            raise CaptureError(
                f"{len(failed)} of {len(manifest.shapes)} shapes failed;"
                f" see {output / 'manifest.json'}"
            )


RulesOption = Annotated[
    Path | None, typer.Option("--rules", help="rules YAML (default: the packaged legacy-v1 rules)")
]


@app.command()
def classify(
    inputs: Annotated[
        list[Path], typer.Argument(help="report files (.ncu-rep[.xz|.gz]) or folders")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="cards JSON to write")],
    rules: RulesOption = None,
    jobs: Annotated[int, typer.Option(help="parallel report readers (0: one per core)")] = 0,
) -> None:
    """Read reports, classify every kernel, write capability cards and print the summary."""
    from .cardfile import write_card_file
    from .classify import classify as run_classify
    from .rules import load_rules

    with _errors():
        loaded = load_rules(rules)
        cards = run_classify(inputs, loaded, jobs=jobs or None)
        for problem in cards.input_errors:
            err.print(f"ncu-classify: error: {problem}", markup=False)
        if not cards.cards:
            raise ReportError("no readable report among the inputs; nothing written")
        write_card_file(output, cards)
    _print_summary(cards)
    out.print(f"wrote {len(cards.cards)} cards to {output}", markup=False)
    if cards.input_errors:
        raise typer.Exit(exit_code_for(ReportError("")))


@app.command()
def reclassify(
    cards_file: Annotated[Path, typer.Argument(help="cards JSON (ours or the legacy format)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="cards JSON to write")],
    rules: RulesOption = None,
) -> None:
    """Re-apply rules to an existing cards file, keeping card and kernel order."""
    from .cardfile import load_card_file, write_card_file
    from .reclassify import reclassify as run_reclassify
    from .rules import load_rules

    with _errors():
        loaded = load_rules(rules)
        cards = run_reclassify(load_card_file(cards_file), loaded)
        write_card_file(output, cards)
    _print_summary(cards)
    out.print(f"wrote {len(cards.cards)} cards to {output}", markup=False)


@app.command()
def summary(
    cards_file: Annotated[Path, typer.Argument(help="cards JSON")],
    csv: Annotated[bool, typer.Option("--csv", help="print CSV instead of a table")] = False,
) -> None:
    """Per-stage counts of primary classes and their share of summed kernel time."""
    from .cardfile import load_card_file

    with _errors():
        cards = load_card_file(cards_file)
    if csv:
        from .summary import summarize, summary_csv

        out.print(summary_csv(summarize(cards)), markup=False, end="")
        return
    _print_summary(cards)


def _print_summary(cards: CardFile) -> None:
    from rich.table import Table

    from .summary import summarize

    table = Table(title="primary class per stage (share of the stage's summed kernel time)")
    for name, justify in [
        ("stage", "left"),
        ("primary", "left"),
        ("cards", "right"),
        ("kernel us", "right"),
        ("share", "right"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in summarize(cards):
        share = "-" if r.share_of_stage is None else f"{100 * r.share_of_stage:.1f}%"
        table.add_row(r.stage, r.primary, str(r.cards), f"{r.kernel_us:,.1f}", share)
    out.print(table)


@app.command()
def schema(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="file to write")] = None,
) -> None:
    """Print (or write) the JSON Schema of the cards file."""
    from .schema import cards_schema_text

    text = cards_schema_text()
    if output is None:
        out.print(text, markup=False, end="")
    else:
        from .atomic import write_text_atomic

        write_text_atomic(output, text)


def main() -> None:
    """Console-script entry point."""
    app()


def run(argv: list[str]) -> int:
    """Run the CLI in-process with `argv`; returns the exit code (for tests and scripts)."""
    try:
        app(argv, standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    main()
