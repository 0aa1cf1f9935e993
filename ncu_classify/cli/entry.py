"""The `ncu-classify` entry point: every command registered, one command line run, and every way
out turned into one line and a documented exit code (the table is `app.EXIT_TABLE`, printed by
`--help` and kept equal to the README's by a test).
"""

from __future__ import annotations

import os
import sys

from ..core.errors import OutputError
from . import capture, classify, compare, present, project, record, tries  # noqa: F401  (register)
from .app import EXIT_CODES, EXIT_INTERNAL, EXIT_INTERRUPTED, app, exit_code_for
from .interrupts import sigterm_as_interrupt
from .streams import forgiving_std_streams, open_std_streams
from .terminal import err, error_line, out

__all__ = ["EXIT_CODES", "app", "run"]


def run(argv: list[str]) -> int:
    """Run the CLI with `argv` and return its exit code. Every way out is one line on stderr
    and a documented code: usage errors (2), library errors, Ctrl-C (130), a full or closed
    stdout (7; a reader that leaves the pipe is no error), and any bug (1;
    NCU_CLASSIFY_DEBUG=1 shows its traceback)."""
    if sys.stdout is None:  # started with stdout closed: a write there fails (7, as /dev/full)
        from . import outputs

        outputs.STDOUT_CLOSED = True
    open_std_streams()
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
            message = exc.format_message()  # type: ignore[attr-defined]
            error_line(f"{_naming_the_value(message, exc, argv)} (see --help)")
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort" or _wrapped_interrupt(exc):
            err.print("ncu-classify: interrupted")
            return EXIT_INTERRUPTED
        if os.environ.get("NCU_CLASSIFY_DEBUG"):
            raise
        error_line(
            f"internal error: {type(exc).__name__}: {exc} (a bug: rerun with"
            " NCU_CLASSIFY_DEBUG=1 for the traceback and report it)"
        )
        return EXIT_INTERNAL
    if result == EXIT_INTERRUPTED:  # ours (app.errors), or typer's for an interrupt it caught
        err.print("ncu-classify: interrupted")  # in parsing or before a command's errors()
    return result if isinstance(result, int) else 0


def _wrapped_interrupt(exc: BaseException) -> bool:
    """A Ctrl-C or SIGTERM that landed in one of our pydantic serializers (`Facts._held`):
    pydantic turns it into a PydanticSerializationError that only names it."""
    return type(exc).__name__ == "PydanticSerializationError" and "KeyboardInterrupt" in str(exc)


def _naming_the_value(message: str, exc: BaseException, argv: list[str]) -> str:
    """A bad option value's message with the value given, where typer's number parsing left it
    out (`--timeout abc`: "Input should be a valid number, ..."): the value after the option's
    last use on the command line."""
    opts = getattr(getattr(exc, "param", None), "opts", None) or []
    if not message.startswith("Invalid value for") or not opts or "Input should be" not in message:
        return message
    given = None
    for index, arg in enumerate(argv):
        for opt in opts:
            if arg == opt and index + 1 < len(argv):
                given = argv[index + 1]
            elif arg.startswith(f"{opt}="):
                given = arg[len(opt) + 1 :]
    if given is None:
        return message
    head, _, rest = message.partition(": ")
    return f"{head}: {given[:80]!r}: {rest}"


def _is_click_error(exc: BaseException) -> bool:
    """A usage error raised by typer's click (bundled or not): it knows its exit code."""
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
