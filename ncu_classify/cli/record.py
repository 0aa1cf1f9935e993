"""`ncu-classify record -o shapes.yaml -- python my_infer.py [args]`: run the user's program
in this process under the recorder and write what it ran as a shapes file."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import EnvironmentProblem, OutputError, RecordError, UsageError
from ..core.text import counted, printable
from ..present.coverage import millis
from ..present.fit import Line
from ..present.tables import check_kind
from ..record.program import Program, loaded_files, module_file, parse_program, run_program
from ..record.warmup import parse_start_at
from .app import EXIT_INTERNAL, EXIT_INTERRUPTED, app, check_output, errors, examples, human
from .outputs import Output
from .terminal import err, error_line, warning_line

if TYPE_CHECKING:
    from ..record.recorder import Recorder
    from ..record.shapes_document import ShapesDocument

STAGE = re.compile(r"^[A-Za-z0-9_]+$")


# The program comes after `--`; without it, its options would be taken for record's.
@app.command(
    "record",
    context_settings={"allow_extra_args": True},
    epilog=examples(
        "ncu-classify record -o shapes.yaml -- python infer.py --steps 1",
        "ncu-classify record -o shapes.yaml --stage 'transformer*=dit' -- python -m my_pipeline",
    ),
)
def record_command(
    ctx: typer.Context,
    output: Annotated[str, typer.Option("-o", "--output", help="shapes YAML to write")],
    stage: Annotated[
        list[str] | None,
        typer.Option(
            "--stage",
            help="MODULE_PATTERN=STAGE, e.g. 'transformer.*=dit' (repeatable; first match wins;"
            " default: the top module's name)",
        ),
    ] = None,
    save_inputs: Annotated[
        Path | None,
        typer.Option("--save-inputs", help="keep the inputs of each distinct shape in this folder"),
    ] = None,
    inputs_budget_mb: Annotated[
        float, typer.Option("--inputs-budget-mb", help="at most this many MB of saved inputs")
    ] = 1024.0,
    kernel_time: Annotated[
        bool,
        typer.Option(
            "--kernel-time/--no-kernel-time",
            help="on a GPU, measure the program's kernel time per call with torch.profiler"
            " (coverage by time); without it coverage is by call count",
        ),
    ] = True,
    chains: Annotated[
        bool,
        typer.Option(
            "--chains/--no-chains",
            help="keep the dataflow and write the chains of device ops between heavy ops",
        ),
    ] = True,
    start_at: Annotated[
        str | None,
        typer.Option(
            "--start-at",
            help="MODULE:N: record from the Nth call of a module (path pattern, as --stage) on;"
            " the warm-up before it (compiling, tuning) runs unrecorded, its kernels counted"
            " as model building, e.g. 'transformer:3'",
        ),
    ] = None,
) -> None:
    """Run `-- python SCRIPT [ARGS]` (or `-- python -m MODULE [ARGS]`, `-- python -c CODE`)
    here and record every op it runs on the device as a shapes file for `capture`:
    linear/matmul, conv, attention and cast shapes, every other device op (elementwise, norms,
    copies, reductions, index ops) as an `aten` shape, with call counts, module paths and, on
    a GPU, the program's own kernel time per call, per stage, and the work no shape covers."""
    with errors():
        command = list(ctx.args)
        patterns = [_stage_pattern(text) for text in stage or []]
        start = parse_start_at(start_at) if start_at is not None else None
        if not 0 <= inputs_budget_mb < 1e9:  # also refuses nan and inf
            raise UsageError(f"--inputs-budget-mb {inputs_budget_mb}: expected 0 to 1e9 MB")
        if output == "-":
            raise UsageError("-o -: the program prints to standard output too; give a file")
        if Path(output).is_dir():  # (record writes no standard output: no `-` in the hint)
            raise UsageError(f"-o {output}: is a folder; give a file name")
        program = parse_program(command)
        source = program.script if program.kind != "module" else module_file(program.target)
        target = check_output(output, [p for p in (source,) if p is not None])
        check_kind(output, "YAML")
        inputs_dir = _inputs_folder(save_inputs, target.path)
        if not _installed("torch"):
            raise EnvironmentProblem(
                f"record runs the program under PyTorch, which is not installed for"
                f" {sys.executable} (pip install torch)"
            )
        from ..record import Recorder

        budget = int(inputs_budget_mb * 1e6)
        recorder = Recorder(patterns, None, inputs_dir, budget, kernel_time, chains, start)
        inputs = [p for p in (source,) if p]
        run = _Run(recorder, command, output, inputs, inputs_dir, set(sys.modules))
        with _start_folder() as back:  # the program may chdir: record's paths are as typed

            def ended(code: int) -> int:
                back()
                return run.ended(program, code)

            failure = run_program(recorder, program, on_exit=ended)
            back()
            document, written = run.write(failure)
    run.announce(document, written)


@contextmanager
def _start_folder() -> Iterator[Callable[[], None]]:
    """The folder the command started in, kept open: the block gets a function that makes it
    the current folder again (also once the program moved or renamed it), so that -o and every
    other relative path record uses after the program are resolved as typed."""
    try:
        handle: int | None = os.open(os.curdir, os.O_RDONLY)
    except OSError:  # (a folder that cannot be opened: paths are resolved where we are)
        handle = None

    def back() -> None:
        if handle is not None:
            with suppress(OSError):
                os.fchdir(handle)

    try:
        yield back
    finally:
        if handle is not None:
            os.close(handle)


class _Run:
    """The end of a recording, whichever way the program ended: the shapes file written (a
    failure of the program after it: exit 5), then the warnings and the line saying what was
    recorded."""

    def __init__(
        self,
        recorder: Recorder,
        command: list[str],
        output: str,
        inputs: list[Path],
        inputs_dir: Path | None,
        modules: set[str],
    ) -> None:
        self.recorder, self.command, self.output = recorder, command, output
        self.inputs, self.inputs_dir, self.modules = inputs, inputs_dir, modules

    def write(self, failure: str | None) -> tuple[ShapesDocument, Output]:
        """The shapes file of what was recorded, or RecordError: nothing to write, or the
        program failed (after writing what it ran)."""
        from ..record import shapes_yaml, validated_document

        # the program's own modules are inputs too: -o must not replace one of them
        try:
            os.getcwd()
        except FileNotFoundError:  # (every relative path is resolved there)
            raise OutputError(
                f"{self.output}: cannot write: the folder record started in was removed while"
                " the program ran"
            ) from None
        if self.recorder.start_at is not None and self.recorder.warming:
            raise RecordError(self.recorder.start_at.never())
        target = check_output(self.output, [*self.inputs, *loaded_files(self.modules)])
        prefix = _inputs_prefix(self.inputs_dir, target.path)
        document = validated_document(self.recorder, shlex.join(self.command), prefix)
        shapes = sum(len(s) for s in document.stages.values())
        if shapes == 0:
            unseen = self.recorder.threads.total
            why = [failure] if failure else []
            why += [
                f"{counted(unseen, 'device-op call')} in other threads {_were(unseen)} not seen"
            ] * bool(unseen)
            raise RecordError(
                f"{' '.join(self.command)}: ran no op on a tensor that the replay can take;"
                " nothing written" + (f" ({'; '.join(why)})" if why else "")
            )
        target.write_text(shapes_yaml(document))
        if failure:
            raise RecordError(
                f"{failure}; the {counted(shapes, 'shape')} recorded before it"
                f" {_were(shapes)} written to {target}"
            )
        return document, target

    def announce(self, document: ShapesDocument, target: Output) -> None:
        """The warnings of the recording, then what was recorded, in one line."""
        recorder = self.recorder
        if recorder.clock.broken:
            warning_line(
                "the program ran a torch.profiler of its own, which ends record's (torch: "
                f"{recorder.clock.broken}): kernel time was not measured, coverage is by calls;"
                " record with --no-kernel-time to leave the profiler to the program"
            )
        for name, count in recorder.recording.not_typed.items():
            warning_line(
                f"{counted(count, 'call')} of {name}: no typed shape could be made; their"
                " device ops are recorded as aten shapes"
            )
        for number, (pattern, stage) in enumerate(recorder.stage_patterns):
            if number not in recorder.used:
                warning_line(
                    f"--stage {printable(pattern)}={stage}: no call's module path matched it"
                    " (or an earlier --stage took them); paths are in the shapes' `source`"
                )
        unseen = recorder.threads.total
        if unseen:
            warning_line(
                f"{counted(unseen, 'device-op call')} in other threads of the program"
                f" {_were(unseen)} not seen (record follows the thread that runs the program);"
                f" {'it is' if unseen == 1 else 'they are'} counted as not covered"
                " (recorded.totals.uncovered)"
            )
        human(target).print(Line(recorded_line(document, str(target))))  # wrapped between words

    def ended(self, program: Program, code: int) -> int:
        """The program called `os._exit(code)`: what it recorded is written as at its end,
        and the exit code is the command's (0, or 5 for a non-zero code)."""
        failure = f"{program.label} ended with os._exit({code})" if code else None
        try:
            with errors():
                document, target = self.write(failure)
        except typer.Exit as stop:
            if stop.exit_code == EXIT_INTERRUPTED:
                err.print("ncu-classify: interrupted")
            return int(stop.exit_code)
        except Exception as exc:  # a bug: said as entry.run says it (no caller to raise to)
            if os.environ.get("NCU_CLASSIFY_DEBUG"):
                raise
            error_line(f"internal error: {type(exc).__name__}: {exc} (a bug: rerun with"
                       " NCU_CLASSIFY_DEBUG=1 for the traceback and report it)")  # fmt: skip
            return EXIT_INTERNAL
        warning_line(f"{program.label} ended with os._exit(0): what it ran before is written")
        self.announce(document, target)
        return 0


def recorded_line(document: ShapesDocument, target: str) -> str:
    """What was recorded, in one line: shapes, calls, stages, and per stage the program's
    kernel time (or calls) and the part no shape covers."""
    from ..record.shapes_document import shape_kinds

    flat = [s for st in document.stages.values() for s in st]
    totals = document.recorded.totals
    assert totals is not None, "a recorder's document always holds its totals"
    timed = totals.basis == "kernel_time"
    missing: dict[str, float] = {}
    for item in totals.uncovered:
        share = (item.kernel_us or 0) if timed else item.calls
        missing[item.stage] = missing.get(item.stage, 0) + share
    parts = []
    for stage, total in totals.stages.items():
        whole = (total.kernel_us or 0) if timed else total.calls
        unit = f"{millis(whole)} of kernels" if timed else counted(total.calls, "call")
        gap = missing.get(stage, 0) / whole * 100 if whole else 0.0
        parts.append(f"{printable(stage)} {unit}, {gap:.1f} % not covered")
    compiled = document.recorded.compiled
    if compiled is not None:  # torch.compile'd regions: as they ran
        parts.append(
            f"compiled: {counted(len(compiled.regions), 'region')},"
            f" {counted(compiled.graphs, 'graph')}, {counted(compiled.recompiles, 'recompile')},"
            f" {counted(sum(compiled.graph_breaks.values()), 'graph break')} (recorded.compiled)"
        )
    if graphs := document.recorded.cuda_graphs:  # CUDA graphs: replays attributed or not
        spread = sum(1 for g in graphs if g.attributed)
        parts.append(
            f"CUDA graphs: {counted(len(graphs), 'graph')},"
            f" {counted(sum(g.replays for g in graphs), 'replay')}, {spread} spread over their"
            " shapes (recorded.cuda_graphs)"
        )
    return (
        f"recorded {counted(len(flat), 'shape')} ({shape_kinds(flat)};"
        f" {counted(sum(s.calls for s in flat), 'call')}) in"
        f" {counted(len(document.stages), 'stage')} to"
        f" {printable(target)}: " + "; ".join(parts)
    )


def _were(count: int) -> str:
    """The verb for `count` things: `was` for one, `were` for more."""
    return "was" if count == 1 else "were"


def _installed(name: str) -> bool:
    """Whether a module can be found (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _stage_pattern(text: str) -> tuple[str, str]:
    """`PATTERN=STAGE`; an empty pattern names the calls made outside any module."""
    pattern, sep, name = text.rpartition("=")
    if not sep or not STAGE.match(name) or "=" in pattern:  # (a module path holds no `=`)
        raise UsageError(
            f"--stage {text!r}: expected MODULE_PATTERN=STAGE (one `=`), STAGE in [A-Za-z0-9_]"
        )
    return pattern, name


def _inputs_folder(given: Path | None, shapes_path: Path | None) -> Path | None:
    """--save-inputs as an absolute folder made now (the program may chdir), or a usage
    error: not a folder, not writable, or the shapes file itself."""
    if given is None:
        return None
    folder = given.resolve()
    if shapes_path is not None and folder == shapes_path:
        raise UsageError(f"--save-inputs {given}: is the -o file; give a folder")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--save-inputs {given}: is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--save-inputs {given}: cannot make it: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--save-inputs {given}: not writable")
    return folder


def _inputs_prefix(folder: Path | None, shapes_path: Path | None) -> str:
    """Saved inputs are named relative to the shapes file's folder."""
    if folder is None:
        return ""
    base = shapes_path.parent if shapes_path is not None else Path.cwd()
    return os.path.relpath(folder, base.resolve()) + "/"
