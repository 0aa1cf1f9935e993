"""The user's program, run in this process as `python` would run it (`python SCRIPT ARGS`, a
folder or zip with `__main__.py`, `python -m MODULE ARGS`, `python -c CODE ARGS`): sys.argv and
sys.path[0] set for it and restored after, its failure described rather than raised, so that
what was recorded before it failed is kept. Its atexit functions run when it ends, as they do
after a script. Its ways of ending that would skip the recording are caught: `os._exit` (the
recording is handed to `on_exit` first), a fork (the child leaves without writing), and a
KeyboardInterrupt it raises itself (a failure of the program, unlike a signal to this one)."""

from __future__ import annotations

import atexit
import importlib.util
import os
import re
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..core.errors import UsageError
from .streams import lent_streams

if TYPE_CHECKING:
    from .calls import CallKwargs

INTERPRETER = re.compile(r"^python[0-9.]*$")
PYTHON_FLAGS = {"-u", "-B", "-O", "-OO", "-E", "-s", "-I", "-q"}  # harmless here
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@dataclass(frozen=True)
class Program:
    """What `-- python ...` names: `kind` script (a file, or a folder or zip holding
    `__main__.py`), module (`-m`) or code (`-c`); `target` the path, module name or code;
    `argv` the program's sys.argv; `label` how messages name it."""

    kind: str
    target: str
    argv: list[str]
    label: str

    @property
    def script(self) -> Path | None:
        """The script's path (None for -m and -c)."""
        return Path(self.target) if self.kind == "script" else None


def parse_program(command: list[str]) -> Program:
    """The program of `python SCRIPT ARGS`, `python -m MODULE ARGS`, `python -c CODE ARGS` or
    `SCRIPT ARGS`; a usage error if there is none to run."""
    if not command:
        raise UsageError("give the program to record after --, e.g. -- python infer.py")
    words = list(command)
    if INTERPRETER.match(Path(words[0]).name):
        words = words[1:]
        while words and words[0] in PYTHON_FLAGS:
            words = words[1:]
    if words[:1] == ["-m"] and len(words) >= 2:
        return Program("module", words[1], words[1:], words[1])
    if words[:1] == ["-c"] and len(words) >= 2:
        return Program("code", words[1], ["-c", *words[2:]], "python -c")
    if not words or words[0].startswith("-"):
        raise UsageError(
            f"{' '.join(command)}: expected python SCRIPT, python -m MODULE or python -c CODE"
        )
    script = Path(words[0])
    if script.is_dir() and not (script / "__main__.py").is_file():
        raise UsageError(f"{words[0]}: a folder without __main__.py")
    if not script.exists():
        raise UsageError(f"{words[0]}: no such script")
    return Program("script", words[0], words, words[0])


def module_file(name: str) -> Path | None:
    """The file of `-m MODULE`, found as `python -m` finds it (the current folder first), or a
    usage error if there is none to run."""
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"-m {name}: {exc}") from None
    finally:
        sys.path[:] = saved
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


@dataclass
class Outcome:
    """How the program ended: the exit status `python` would give, and what went wrong."""

    status: int = 0
    failure: str | None = None


def run_program(
    recorder: Any, program: Program, on_exit: Callable[[int], int] | None = None
) -> str | None:
    """Run the program under the recorder (a context manager with `close()`), then the atexit
    functions it registered; its failure is described, not raised. A signal to this process
    (Ctrl-C, SIGTERM) is raised as KeyboardInterrupt. `os._exit(code)` in the program stops the
    recording and exits with `on_exit(code)` (which writes what was recorded). A child the
    program forked leaves with its own status once it is done, writing nothing. Its
    non-daemon threads are joined before its atexit functions, as `python` joins them. A
    signal noted while it ran ends the run with KeyboardInterrupt, whatever the program did
    with it. Standard output and error (objects and descriptors), sys.argv, sys.path and the
    signal handlers are put back after it."""
    from .threads import joined  # (torch: not loaded with the CLI)

    pid, before = os.getpid(), set(threading.enumerate())
    signalled: list[int] = []
    with (
        lent_streams() as taken_back,
        _signals_noted(signalled),
        _exit_caught(recorder, taken_back, pid, on_exit, signalled),
        _exit_functions() as functions,
        recorder,
        as_main(program),
    ):
        outcome = _ended(lambda: _run(program), program.label, signalled)
        joined(before)  # recorded still: their ops are counted as run in another thread
        for func, args, kwargs in reversed(functions):  # newest first, as at exit
            _call_exit_function(func, args, kwargs, signalled)
    if os.getpid() != pid:  # a forked child ran the program to its end: it writes nothing
        _flushed()
        os._exit(outcome.status)
    if signalled:  # a signal the program caught and swallowed still interrupts: nothing written
        raise KeyboardInterrupt
    return outcome.failure


def _run(program: Program) -> None:
    """The program's code, run as `__main__`."""
    if program.kind == "module":
        runpy.run_module(program.target, run_name="__main__", alter_sys=True)
    elif program.kind == "code":
        main = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(compile(program.target, "<string>", "exec"), main)
    else:
        runpy.run_path(program.target, run_name="__main__")


def _ended(run: Callable[[], Any], label: str, signalled: list[int]) -> Outcome:
    """Run `run` and say how it ended as `python` would: SystemExit's code (a text is printed
    and is status 1), an exception (status 1); a KeyboardInterrupt is the program's own unless
    a signal came."""
    try:
        run()
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            status = int(code or 0)
            return Outcome(status, f"{label} exited with {status}" if status else None)
        with suppress(OSError, ValueError):  # (a stderr the program closed: lost, as in python)
            print(code, file=sys.stderr)  # `sys.exit("message")`: python prints it, status 1
        return Outcome(1, f"{label} exited with 1 ({' '.join(str(code).split())[:300]})")
    except KeyboardInterrupt:
        if signalled:
            raise
        return Outcome(1, f"{label} raised KeyboardInterrupt (not a signal to ncu-classify)")
    except BaseException as exc:  # the user's program failed: report it, keep what was recorded
        text = " ".join(str(exc).split())[:300]
        return Outcome(1, f"{label} raised {type(exc).__name__}: {text}")
    return Outcome()


def _call_exit_function(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: CallKwargs, signalled: list[int]
) -> None:
    """One atexit function of the program; what it raises is printed and ignored, as Python
    does at exit (a signal to this process still interrupts)."""
    try:
        func(*args, **kwargs)
    except SystemExit:
        pass
    except KeyboardInterrupt:
        if signalled:
            raise
        _told(traceback.format_exc())
    except BaseException:
        _told(f"Exception ignored in atexit callback {func!r}:\n{traceback.format_exc()}")


def _told(text: str) -> None:
    """`text` on the program's stderr, as python prints it at exit; lost if it closed it."""
    with suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(text)


@contextmanager
def _signals_noted(signalled: list[int]) -> Iterator[None]:
    """The handlers that raise KeyboardInterrupt (Ctrl-C, and SIGTERM and SIGHUP as the CLI
    sets them) note the signal first, so that a KeyboardInterrupt the program raises itself is
    told apart; every handler (also one the program set) is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def noted(signum: int, frame: Any) -> None:
        signalled.append(signum)
        raise KeyboardInterrupt

    saved = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig, handler in saved.items():
        if handler is signal.default_int_handler:
            signal.signal(sig, noted)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextmanager
def _exit_caught(
    recorder: Any,
    taken_back: Callable[[], None],
    pid: int,
    on_exit: Callable[[int], int] | None,
    signalled: list[int],
) -> Iterator[None]:
    """`os._exit(code)` in the program (any thread): the recording is stopped and handed to
    `on_exit`, whose code the process then exits with. In a forked child it exits at once."""
    real = os._exit

    def _exit(status: int) -> NoReturn:
        if os.getpid() != pid or on_exit is None or not isinstance(status, int):
            real(status)
        try:
            recorder.close()
            taken_back()
            if signalled:  # a signal came first: interrupted, nothing written
                print("ncu-classify: interrupted", file=sys.stderr)
                final = 130
            else:
                final = on_exit(status)
        except BaseException:  # an exit must happen: never back into the program
            traceback.print_exc()
            final = 1
        _flushed()
        real(final)

    os._exit = _exit
    try:
        yield
    finally:
        os._exit = real


@contextmanager
def _exit_functions() -> Iterator[list[tuple[Callable[..., Any], tuple[Any, ...], CallKwargs]]]:
    """The atexit functions the program registers (and unregisters) while it runs, kept to be
    run when it ends instead of when this process does."""
    kept: list[tuple[Callable[..., Any], tuple[Any, ...], CallKwargs]] = []
    register, unregister = atexit.register, atexit.unregister

    def kept_register(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
        kept.append((func, args, kwargs))
        return func

    def kept_unregister(func: Callable[..., Any]) -> None:
        kept[:] = [k for k in kept if k[0] != func]
        unregister(func)

    atexit.register, atexit.unregister = kept_register, kept_unregister  # type: ignore[assignment]
    try:
        yield kept
    finally:
        atexit.register, atexit.unregister = register, unregister


def _flushed() -> None:
    """Standard output and error flushed before an exit that would not flush them."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError, AttributeError):
            stream.flush()


@contextmanager
def as_main(program: Program) -> Iterator[None]:
    """sys.argv and sys.path[0] as `python` would set them, restored after."""
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    sys.argv = list(program.argv)
    script = program.script
    if script is None:  # -m and -c: the current folder
        sys.path.insert(0, os.getcwd())
    elif script.is_file() and not _is_zip(script):
        sys.path.insert(0, str(script.parent.resolve()))
    # (a folder or zip: runpy.run_path puts it first itself)
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _is_zip(path: Path) -> bool:
    """A zip archive (python runs its `__main__.py`)."""
    import zipfile

    return zipfile.is_zipfile(path)
