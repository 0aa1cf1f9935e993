"""Load YAML keeping line numbers, and validate it with pydantic into `file:line:col` errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.reader import ReaderError

from .errors import InputFileError, error_loc
from .textio import MIB, line_col, read_text

M = TypeVar("M", bound=BaseModel)


# ruamel's round-trip parser reads about 100 KB/s: bounded files stay bounded in time
# (a shapes file this size holds ~13,000 shapes; rules files are a few KB).
MAX_YAML_BYTES = 2 * MIB
MAX_DEPTH = 32  # shapes files need 5 levels, rules files a few more per nested any/all group
_OPENERS = (SequenceStartEvent, MappingStartEvent)
_CLOSERS = (SequenceEndEvent, MappingEndEvent)


def load_yaml(path: Path, error: type[InputFileError]) -> Any:
    """The YAML tree of `path` (see `parse_yaml`)."""
    return parse_yaml(path, read_text(path, error, MAX_YAML_BYTES), error)


def parse_yaml(path: Path, text: str, error: type[InputFileError]) -> Any:
    """Parse `text` (read from `path`) in round-trip mode: every mapping and list remembers its
    line.

    The events are checked first, before anything is built: aliases are refused (a few hundred
    bytes of nested aliases expand into gigabytes for the validator) and so is nesting deeper
    than MAX_DEPTH (the composer recurses).
    """
    try:
        _check_events(path, text, error)
        return YAML(typ="rt").load(text)
    except YAMLError as exc:
        raise error(f"{_where(path, text, exc)}: invalid YAML: {_problem(exc)}") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to read") from None
    except ValueError as exc:  # ruamel building a value: a 5000-digit integer, say
        raise error(f"{path}: invalid YAML value: {exc}") from None


def _check_events(path: Path, text: str, error: type[InputFileError]) -> None:
    """Refuse aliases and deep nesting, reading parser events only (no tree is built)."""
    depth = 0
    for event in YAML(typ="rt").parse(text):
        if isinstance(event, AliasEvent):
            raise error(
                f"{_at(path, event)}: YAML aliases (*{event.anchor}) are not allowed here;"
                " write the value out"
            )
        if isinstance(event, _OPENERS):
            depth += 1
            if depth > MAX_DEPTH:
                raise error(f"{_at(path, event)}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, _CLOSERS):
            depth -= 1


def _at(path: Path, event: Any) -> str:
    mark = event.start_mark
    return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)


def _where(path: Path, text: str, exc: YAMLError) -> str:
    """`file:line:col` of a ruamel error: its problem mark, or the reader's character position."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"{path}:{mark.line + 1}:{mark.column + 1}"
    position = getattr(exc, "position", None)
    if isinstance(position, int):
        line, col = line_col(text, position)
        return f"{path}:{line}:{col}"
    return str(path)


def _problem(exc: YAMLError) -> str:
    """ruamel's description of the problem, on one line."""
    if isinstance(exc, ReaderError):
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return f"character #x{code:04x} is not allowed (control character)"
    text = getattr(exc, "problem", None) or str(exc)
    return " ".join(str(text).split())


def _walk(root: Any, loc: Sequence[int | str]) -> tuple[tuple[int, int] | None, list[str]]:
    """Line/column (1-based) of the deepest node of `loc` found in the YAML tree, and the path
    of keys that exist there (pydantic adds union tags such as `tagged-union[...]` or `linear`
    to its locations; they are skipped)."""
    node, best, path = root, None, []
    for key in loc:
        if isinstance(node, CommentedMap) and key in node:
            line, col = node.lc.key(key)
        elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
            line, col = node.lc.item(key)
        elif isinstance(key, str):
            continue
        else:
            break
        best, node = (line + 1, col + 1), node[key]
        path.append(str(key))
    return best, path


def describe_validation_error(path: Path, root: Any, exc: ValidationError) -> str:
    """First pydantic error as `file:line:col: field.path: message`."""
    first = exc.errors()[0]
    pos, keys = _walk(root, error_loc(first))
    if first["type"] == "missing" and first["loc"]:
        keys.append(str(first["loc"][-1]))  # not in the file: name what is missing
    where = f"{path}:{pos[0]}:{pos[1]}" if pos else str(path)
    return f"{where}: {'.'.join(keys) or '(top level)'}: {first['msg']}"


def validate_yaml(
    path: Path, model: type[M], error: type[InputFileError], text: str | None = None
) -> M:
    """Load `path` (or its `text`, already read) and validate it as `model`; any problem becomes
    one `error` line."""
    if text is None:
        text = read_text(path, error, MAX_YAML_BYTES)
    root = parse_yaml(path, text, error)
    if root is None:
        raise error(f"{path}: file is empty")
    try:
        return model.model_validate(root)
    except ValidationError as exc:
        raise error(describe_validation_error(path, root, exc)) from None
