"""What every command shares: the typer app, the one place where library errors become exit
codes and one-line messages, and the checked output option."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from .._version import __version__
from ..core.errors import (
    CaptureError,
    EnvironmentProblem,
    GateFailed,
    InputFileError,
    NcuClassifyError,
    OutputError,
    ReportError,
    UsageError,
)
from ..core.paths import given_line, short_names
from .terminal import err, error_line, out, warning_line

if TYPE_CHECKING:
    from ..cards.model import CardFile
    from .outputs import Output

EXIT_CODES: list[tuple[type[NcuClassifyError], int]] = [
    (UsageError, 2),
    (InputFileError, 3),
    (ReportError, 4),
    (CaptureError, 5),
    (EnvironmentProblem, 6),
    (OutputError, 7),
    (GateFailed, 8),
]
EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 130
# Every exit code and what it means, first words of the README's table (a test keeps them equal).
EXIT_TABLE = [
    (0, "success"),
    (EXIT_INTERNAL, "internal error, i.e. a bug"),
    (2, "usage error"),
    (3, "an input file is invalid"),
    (4, "some reports could not be read"),
    (5, "some shapes failed to capture"),
    (6, "the environment lacks something the command needs"),
    (7, "an output could not be written"),
    (8, "`diff --fail-on`: a guarded condition holds"),
    (EXIT_INTERRUPTED, "interrupted"),
]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: flags without a `<bool>` value, text rewrapped
    context_settings={"help_option_names": ["-h", "--help"]},
    help="What bounds each GPU kernel, from Nsight Compute hardware counters.",
    epilog="Exit codes: " + "; ".join(f"{code} {what}" for code, what in EXIT_TABLE) + ".",
)


def examples(*lines: str) -> str:
    """A command's help epilog: its examples, kept as written (click rewraps a paragraph
    unless it starts with a backspace line); a test runs each through the command's parser."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def read_cards(path: Path) -> CardFile:
    """A cards file for a command, ours or legacy; what reading a legacy file could not use
    (odd fields kept aside, impossible values, repeated shapes) is said as warnings."""
    from ..cards.files import load_card_file

    cards = load_card_file(path)
    if cards.source_format == "legacy":  # named as from any folder: shown as given
        named = {path: short_names([path])[0]}
        for warning in cards.input_warnings:
            warning_line(given_line(warning, named))
    return cards


def exit_code_for(exc: NcuClassifyError) -> int:
    """The documented exit code of a library error."""
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return EXIT_INTERNAL


@contextmanager
def errors() -> Iterator[None]:
    """Turn library errors into one line on stderr and their exit code; no traceback."""
    try:
        yield
    except NcuClassifyError as exc:
        error_line(str(exc))
        raise typer.Exit(exit_code_for(exc)) from None
    except KeyboardInterrupt:  # said by entry.run, as for one typer turns into 130 itself
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _version(value: bool) -> None:
    if value:
        out.print(f"ncu-classify {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """What bounds each GPU kernel, from Nsight Compute hardware counters."""
    from ..core.clock import pinned_epoch

    with errors():  # a malformed SOURCE_DATE_EPOCH fails before anything is done (exit 2)
        pinned_epoch()


def usage(exc: UsageError) -> typer.Exit:
    error_line(str(exc))
    return typer.Exit(2)


OutputOption = Annotated[
    str, typer.Option("-o", "--output", help="file to write; - for standard output")
]
RulesOption = Annotated[
    Path | None, typer.Option("--rules", help="rules YAML (default: the packaged legacy-v1 rules)")
]
CardsArgument = Annotated[
    Path, typer.Argument(help="cards JSON (ours or the legacy format)", readable=False)
]


def check_output(given: str, inputs: list[Path], option: str = "-o") -> Output:
    """The checked output, or exit 2 before any work. The packaged rules and noise files are
    inputs of every command (read when no other is given), so no -o may replace them."""
    from ..core.noise import DEFAULT_NOISE
    from ..verdicts.rules import DEFAULT_RULES
    from .outputs import output_file

    try:
        return output_file(given, [*inputs, DEFAULT_RULES, DEFAULT_NOISE], option)
    except UsageError as exc:
        raise usage(exc) from None


def check_inputs(paths: list[Path]) -> None:
    """Refuse up front, exit 3, an input file that is not a readable regular file (a FIFO that
    would hang the read, a device, a folder, a dangling link): before any other is read."""
    from ..core.textio import check_regular

    check_regular(paths, InputFileError)


def human(target: Output | None) -> Console:
    """Where tables and notes go: stdout, unless the data itself goes there."""
    return err if target is not None and target.is_stdout else out


def same_target(first: Output, second: Output) -> bool:
    """Two checked outputs that would write the same file (or both standard output)."""
    return first.path == second.path
