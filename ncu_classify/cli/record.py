"""`ncu-classify record -o shapes.yaml -- python my_infer.py [args]`: run the user's program
in this process under the recorder and write what it ran as a shapes file."""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import RecordError, UsageError
from ..core.text import printable
from ..present.tables import check_kind
from .app import app, check_output, errors, human

STAGE = re.compile(r"^[A-Za-z0-9_]+$")


# The program comes after `--`; without it, its options would be taken for record's.
@app.command(context_settings={"allow_extra_args": True})
def record(
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
) -> None:
    """Run `-- python SCRIPT [ARGS]` (or `-- python -m MODULE [ARGS]`) here and record the
    linear/matmul, conv3d, attention and cast shapes it runs, with call counts and module
    paths, as a shapes file for `capture`."""
    with errors():
        command = list(ctx.args)
        patterns = [_stage_pattern(text) for text in stage or []]
        if not 0 <= inputs_budget_mb < 1e9:  # also refuses nan and inf
            raise UsageError(f"--inputs-budget-mb {inputs_budget_mb}: expected 0 to 1e9 MB")
        if output == "-":
            raise UsageError("-o -: the program prints to standard output too; give a file")
        script, argv = _program(command)
        source = script if script is not None else _module_file(argv[0])
        target = check_output(output, [p for p in (source,) if p is not None])
        check_kind(output, "YAML")
        inputs_dir = _inputs_folder(save_inputs, target.path)
        from ..record import Recorder, shapes_yaml, validated_document

        recorder = Recorder(patterns, None, inputs_dir, int(inputs_budget_mb * 1e6))
        before = set(sys.modules)
        failure = _run(recorder, script, argv)
        # the program's own modules are inputs too: -o must not replace one of them
        target = check_output(output, [*(p for p in (source,) if p), *_loaded_files(before)])
        prefix = _inputs_prefix(inputs_dir, target.path)
        document = validated_document(recorder, shlex.join(command), prefix)
        shapes = sum(len(s) for s in document["stages"].values())
        if shapes == 0:
            raise RecordError(
                f"{' '.join(command)}: ran no linear, matmul, conv3d, attention or cast the"
                " replay can take; nothing written" + (f" ({failure})" if failure else "")
            )
        target.write_text(shapes_yaml(document))
        if failure:
            raise RecordError(
                f"{failure}; the {shapes} shapes recorded before it were written to {target}"
            )
    calls = sum(s["calls"] for st in document["stages"].values() for s in st)
    human(target).print(
        f"recorded {shapes} shapes ({calls} calls) in {len(document['stages'])} stages to"
        f" {printable(str(target))}; {len(document['recorded']['unreplayable'])} other ops"
        " counted under recorded.unreplayable"
    )


def _stage_pattern(text: str) -> tuple[str, str]:
    """`PATTERN=STAGE`; an empty pattern names the calls made outside any module."""
    pattern, sep, name = text.rpartition("=")
    if not sep or not STAGE.match(name):
        raise UsageError(f"--stage {text!r}: expected MODULE_PATTERN=STAGE, STAGE in [A-Za-z0-9_]")
    return pattern, name


INTERPRETER = re.compile(r"^python[0-9.]*$")
PYTHON_FLAGS = {"-u", "-B", "-O", "-OO", "-E", "-s", "-I", "-q"}  # harmless here


def _program(command: list[str]) -> tuple[Path | None, list[str]]:
    """(script, argv) of `python SCRIPT ARGS`, `python -m MODULE ARGS` or `SCRIPT ARGS`;
    for a module the script is None and argv[0] the module name."""
    if not command:
        raise UsageError("give the program to record after --, e.g. -- python infer.py")
    words = list(command)
    if INTERPRETER.match(Path(words[0]).name):
        words = words[1:]
        while words and words[0] in PYTHON_FLAGS:
            words = words[1:]
    if words[:1] == ["-m"] and len(words) >= 2:
        return None, words[1:]
    if not words or words[0].startswith("-"):
        raise UsageError(f"{' '.join(command)}: expected python SCRIPT or python -m MODULE")
    script = Path(words[0])
    if not script.is_file():
        raise UsageError(f"{words[0]}: no such script")
    return script, words


def _module_file(name: str) -> Path | None:
    """The file of `-m MODULE` (a usage error if there is none to run)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"-m {name}: {exc}") from None
    if spec is None:
        raise UsageError(f"-m {name}: no such module")
    return Path(spec.origin) if spec.origin and spec.origin != "built-in" else None


def _loaded_files(before: set[str]) -> list[Path]:
    """Source files of the modules the program imported."""
    files = []
    for name in set(sys.modules) - before:
        origin = getattr(sys.modules.get(name), "__file__", None)
        if origin:
            files.append(Path(origin))
    return files


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


def _run(recorder: object, script: Path | None, argv: list[str]) -> str | None:
    """Run the program under the recorder; a failure is described, not raised (Ctrl-C is).
    Standard output and error are restored after it, whatever it did to them."""
    streams = sys.stdout, sys.stderr
    try:
        with recorder, _as_main(script, argv):  # type: ignore[attr-defined]
            if script is None:
                runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            return f"{argv[0]} exited with {stop.code}"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's program failed: report it, keep what was recorded
        text = " ".join(str(exc).split())[:300]
        return f"{argv[0]} raised {type(exc).__name__}: {text}"
    finally:
        sys.stdout, sys.stderr = streams
    return None


@contextmanager
def _as_main(script: Path | None, argv: list[str]) -> Iterator[None]:
    """sys.argv and sys.path[0] as `python SCRIPT ARGS` would set them, restored after."""
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    sys.argv = [str(script) if script else argv[0], *argv[1:]]
    sys.path.insert(0, str(script.parent.resolve()) if script else os.getcwd())
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _inputs_prefix(folder: Path | None, shapes_path: Path | None) -> str:
    """Saved inputs are named relative to the shapes file's folder."""
    if folder is None:
        return ""
    base = shapes_path.parent if shapes_path is not None else Path.cwd()
    return os.path.relpath(folder, base.resolve()) + "/"
