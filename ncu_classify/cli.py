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

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .errors import (
    CaptureError,
    EnvironmentProblem,
    InputFileError,
    NcuClassifyError,
    PartialFailure,
    ReportError,
)

EXIT_CODES: list[tuple[type[NcuClassifyError], int]] = [
    (InputFileError, 3),
    (ReportError, 4),
    (PartialFailure, 4),
    (CaptureError, 5),
    (EnvironmentProblem, 6),
]

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="What bounds each GPU kernel, from Nsight Compute hardware counters.")
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


def _warn(message: str) -> None:
    err.print(f"ncu-classify: warning: {message}", markup=False)


@app.command()
def capture(
    shapes: Annotated[Path, typer.Option("--shapes", help="shapes YAML file")],
    output: Annotated[Path, typer.Option("-o", "--output", help="folder for reports + manifest")],
    ncu: Annotated[str, typer.Option(help="ncu executable")] = "ncu",
    timeout: Annotated[float, typer.Option(help="seconds allowed per ncu process")] = 3600.0,
) -> None:
    """Replay every shape under ncu (one process per stage) into OUTPUT, with a manifest."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .capture import capture as run_capture
    from .shapes import load_shapes

    with _errors():
        load_shapes(shapes)  # report a bad file before any progress display
    with _errors(), Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             console=err, transient=False) as bar:
        task = bar.add_task("capture", total=None)

        def progress(done: int, total: int, group: str, status: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{status:6} {group}")

        manifest = run_capture(shapes, output, ncu=ncu, timeout_s=timeout, progress=progress)
    failed = [s for s in manifest.shapes if s.status != "ok"]
    for s in manifest.shapes:
        passes = sorted(set(s.replay_passes))
        out.print(f"{s.status:6} {s.group}  kernels={s.kernels} passes={passes}"
                  + (f"  ({s.error})" if s.error else ""), markup=False)
    for b in manifest.batches:
        out.print(f"batch {b.name}: ncu exit {b.exit_code}, {b.wall_seconds} s", markup=False)
    if failed:
        with _errors():
            raise CaptureError(f"{len(failed)} of {len(manifest.shapes)} shapes failed;"
                               f" see {output / 'manifest.json'}")


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


_ = (sys, Callable, _warn)

if __name__ == "__main__":
    main()
