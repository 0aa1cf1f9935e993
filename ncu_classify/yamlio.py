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
    pos, keys = _walk(root, first["loc"])
    where = f"{path}:{pos[0]}:{pos[1]}" if pos else str(path)
    return f"{where}: {'.'.join(keys) or '(top level)'}: {first['msg']}"


def validate_yaml(path: Path, model: type[M], error: type[InputFileError]) -> M:
    """Load `path` and validate it as `model`; any problem becomes one `error` line."""
    root = load_yaml(path, error)
    if root is None:
        raise error(f"{path}: file is empty")
    try:
        return model.model_validate(root)
    except ValidationError as exc:
        raise error(describe_validation_error(path, root, exc)) from None
