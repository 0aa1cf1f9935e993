"""One exception tree for the library; only the CLI turns these into exit codes and messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class NcuClassifyError(Exception):
    """Root of every error the library raises on purpose; its str() is one line for the user."""


class UsageError(NcuClassifyError):
    """The command was asked for something it cannot do as given (an option value, an output
    path that would destroy an input); detected before any work is done."""


class InputFileError(NcuClassifyError):
    """A user-supplied file (shapes, rules, cards) is missing, unreadable or invalid."""


class ShapesError(InputFileError):
    """A shapes file is invalid; the message names the file, line and field."""


class RulesError(InputFileError):
    """A rules file is invalid; the message names the file, line and field."""


class CardsError(InputFileError):
    """A cards file cannot be read or is not in a known card format."""


class NoiseError(InputFileError):
    """A noise file (diff's tolerances) is invalid; the message names the file, line and field."""


class GpuTableError(InputFileError):
    """The table of GPUs a projection uses is invalid; the message names the file and field."""


class ManifestError(InputFileError):
    """A capture manifest cannot be read or does not validate."""


class ReportError(NcuClassifyError):
    """An Nsight Compute report cannot be opened or read."""


class CaptureError(NcuClassifyError):
    """Capture could not run or finish (one or more shapes or batches failed)."""


class EnvironmentProblem(NcuClassifyError):
    """The machine lacks something capture needs (a GPU, ncu, counter permissions)."""


class OutputError(NcuClassifyError):
    """An output could not be written (permission, full disk); nothing partial was left."""


class GateFailed(NcuClassifyError):
    """A `diff --fail-on` condition holds: the candidate changed in a way the user guards."""


class RecordError(CaptureError):
    """The recorded program failed or ran no op the replay can take (what was recorded before
    a failure is still written)."""


def error_loc(error: Any) -> tuple[str | int, ...]:
    """Where a pydantic error points: its `loc`, then the path inside that field a validator
    named (`ctx["inner"]`: the argument of a recorded op, which pydantic cannot type)."""
    inner = (error.get("ctx") or {}).get("inner") or ()
    return (*error["loc"], *inner)


def validation_line(exc: ValidationError) -> str:
    """A pydantic error as one line: the first problem as `field.path: message`, with how many
    others there are (the one wording of every file the tool validates)."""
    problems = exc.errors()
    first = problems[0]
    where = ".".join(str(part) for part in error_loc(first)) or "(top level)"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {_message(first)}{more}"


def _message(problem: Any) -> str:
    """Pydantic's message, or what it means for a whole number of more than 18 digits, which a
    JSON file hands over as a float (`textio.read_json`): beyond any count this tool reads."""
    given = problem.get("input")
    if problem["type"] == "int_type" and isinstance(given, float) and abs(given) >= 1e18:
        return f"{given:.6g} is beyond any count this tool reads (at most 18 digits, < 10**18)"
    return str(problem["msg"])
