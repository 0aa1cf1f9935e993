"""The user's program, run in this process as `python` would run it (`python SCRIPT ARGS`,
`python -m MODULE ARGS`): sys.argv and sys.path[0] set for it and restored after, its failure
described rather than raised, so that what was recorded before it failed is kept."""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import UsageError

INTERPRETER = re.compile(r"^python[0-9.]*$")


PYTHON_FLAGS = {"-u", "-B", "-O", "-OO", "-E", "-s", "-I", "-q"}  # harmless here


def parse_program(command: list[str]) -> tuple[Path | None, list[str]]:
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


def module_file(name: str) -> Path | None:
    """The file of `-m MODULE` (a usage error if there is none to run)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"-m {name}: {exc}") from None
    if spec is None:
        raise UsageError(f"-m {name}: no such module")
    return Path(spec.origin) if spec.origin and spec.origin != "built-in" else None


def loaded_files(before: set[str]) -> list[Path]:
    """Source files of the modules the program imported."""
    files = []
    for name in set(sys.modules) - before:
        origin = getattr(sys.modules.get(name), "__file__", None)
        if origin:
            files.append(Path(origin))
    return files


def run_program(recorder: object, script: Path | None, argv: list[str]) -> str | None:
    """Run the program under the recorder; a failure is described, not raised (Ctrl-C is).
    Standard output and error are restored after it, whatever it did to them."""
    streams = sys.stdout, sys.stderr
    try:
        with recorder, as_main(script, argv):  # type: ignore[attr-defined]
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
def as_main(script: Path | None, argv: list[str]) -> Iterator[None]:
    """sys.argv and sys.path[0] as `python SCRIPT ARGS` would set them, restored after."""
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    sys.argv = [str(script) if script else argv[0], *argv[1:]]
    sys.path.insert(0, str(script.parent.resolve()) if script else os.getcwd())
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
