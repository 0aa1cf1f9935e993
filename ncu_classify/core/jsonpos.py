"""Where a value sits in a JSON text, for `file:line:col` in error messages.

Only called when an error is reported: the path is followed through the text, members and
elements before the one wanted are skipped with the standard decoder, so the cost is one parse
of what precedes the value at most, and nothing is kept around while a file reads normally.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .errors import InputFileError, error_loc, validation_line
from .textio import line_col

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


def value_offset(text: str, path: Sequence[str | int]) -> int:
    """Offset in `text` of the value at `path` (keys and list indices), or of the deepest
    object or list on the way that holds it (a missing member points at its container)."""
    pos = _skip_space(text, 0)
    for step in path:
        found = _member(text, pos, step)
        if found is None:
            return pos
        pos = found
    return pos


def value_line_col(text: str, path: Sequence[str | int]) -> tuple[int, int]:
    """1-based line and column of the value at `path` (see `value_offset`)."""
    return line_col(text, value_offset(text, path))


def validation_at(path: Path, exc: ValidationError) -> str:
    """`file:line:col` of the value the first validation error of a JSON file is about, found
    only now by reading the text again; the file alone where it cannot be read again."""
    loc = [part for part in error_loc(exc.errors()[0]) if isinstance(part, (str, int))]
    try:
        line, col = value_line_col(path.read_text(encoding="utf-8", errors="replace"), loc)
    except (OSError, ValueError, RecursionError):
        return str(path)
    return f"{path}:{line}:{col}"


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    return pos


def _member(text: str, pos: int, step: str | int) -> int | None:
    """Offset of member `step` of the object or list at `pos` (the last of repeated keys, as
    json.loads keeps it); None if absent or the text there is not a container."""
    opener = text[pos : pos + 1]
    if opener not in ("{", "["):
        return None
    found: int | None = None
    index, pos = 0, _skip_space(text, pos + 1)
    try:
        while pos < len(text) and text[pos] not in "}]":
            here: object = index
            if opener == "{":
                here, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
                pos = _skip_space(text, _skip_space(text, pos) + 1)  # past the colon
            if here == step or (opener == "{" and here == str(step)):
                found = pos
                if opener == "[":
                    return found
            _, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_space(text, pos)
            pos = _skip_space(text, pos + 1) if text[pos : pos + 1] == "," else pos
            index += 1
    except (ValueError, RecursionError):
        return found
    return found


Model = TypeVar("Model", bound="BaseModel")


def read_model(
    path: Path, model: type[Model], error: type[InputFileError], max_bytes: int, what: str
) -> Model:
    """A JSON file validated as `model`; a file that is not one is one `error` line with the
    file, line and column of the first problem, `what` before it ("manifest field ")."""
    from pydantic import ValidationError

    from .textio import read_json

    doc = read_json(path, error, max_bytes)
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        raise error(f"{validation_at(path, exc)}: {what}{validation_line(exc)}") from None
