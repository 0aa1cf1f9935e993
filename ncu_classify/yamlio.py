"""Load YAML keeping line numbers, and validate it with pydantic into `file:line:col` errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from .errors import InputFileError

M = TypeVar("M", bound=BaseModel)


def load_yaml(path: Path, error: type[InputFileError]) -> Any:
    """Parse `path` in round-trip mode so that every mapping and list remembers its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise error(f"{where}: invalid YAML: {exc.problem}") from None


def _position(root: Any, loc: Sequence[int | str]) -> tuple[int, int] | None:
    """Line and column (1-based) of the deepest node of `loc` that exists in the YAML tree."""
    node, best = root, None
    for key in loc:
        if isinstance(node, CommentedMap) and key in node:
            line, col = node.lc.key(key)
            best = (line + 1, col + 1)
            node = node[key]
        elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
            line, col = node.lc.item(key)
            best = (line + 1, col + 1)
            node = node[key]
        elif isinstance(key, str) and isinstance(node, CommentedMap):
            continue  # a tagged-union tag (e.g. `linear`) that pydantic adds to the path
        else:
            break
    return best


def describe_validation_error(path: Path, root: Any, exc: ValidationError) -> str:
    """First pydantic error as `file:line:col: field.path: message` (plus a count of the rest)."""
    errors = exc.errors()
    first = errors[0]
    loc = [p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    pos = _position(root, loc)
    where = f"{path}:{pos[0]}:{pos[1]}" if pos else str(path)
    field = ".".join(str(part) for part in loc) or "(top level)"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {field}: {first['msg']}{more}"


def validate_yaml(path: Path, model: type[M], error: type[InputFileError]) -> M:
    """Load `path` and validate it as `model`; any problem becomes one `error` line."""
    root = load_yaml(path, error)
    if root is None:
        raise error(f"{path}: file is empty")
    try:
        return model.model_validate(root)
    except ValidationError as exc:
        raise error(describe_validation_error(path, root, exc)) from None
