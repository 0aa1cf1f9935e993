"""Paths as outputs name them: by what they are, not by where the command ran from."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

VAGUE_NAMES = frozenset({"cards.json"})  # names that say nothing alone: a folder in front


def short_names(paths: Sequence[str | Path]) -> list[str]:
    """A short, distinct name per path, the same from any working folder: its name, with as
    many folders in front as it takes to tell the paths apart (two at least for a name that
    says nothing alone, `run/cards.json`); a path given twice gets one name."""
    parts = [Path(os.path.abspath(p)).parts for p in paths]
    depth = [2 if part[-1] in VAGUE_NAMES else 1 for part in parts]
    while True:
        names = [
            "/".join(part[-d:]).lstrip("/") or "/" for part, d in zip(parts, depth, strict=True)
        ]
        owners: dict[str, set[tuple[str, ...]]] = {}
        for name, part in zip(names, parts, strict=True):
            owners.setdefault(name, set()).add(part)
        clashes = [i for i, name in enumerate(names) if len(owners[name]) > 1]
        if not clashes or all(depth[i] >= len(parts[i]) for i in clashes):
            return names
        for i in clashes:
            depth[i] += 1


def shown_under(path: Path, named: dict[Path, str]) -> str:
    """`path` as outputs name it: below one of the `named` inputs (input -> `short_names`
    name), that name and the rest of the path (`smoke_h200/dit.ncu-rep.xz`); else as given."""
    for given in sorted(named, key=lambda p: -len(p.parts)):
        if path == given:
            return named[given]
        if given in path.parents:
            return f"{named[given]}/{path.relative_to(given).as_posix()}"
    return str(path)


def _starts_with(line: str, prefix: str) -> bool:
    return line.startswith(prefix) and line[len(prefix) : len(prefix) + 1] in ("", "/", ":", " ")


def shown_line(line: str, named: dict[Path, str]) -> str:
    """A message with inputs' paths as given (or paths below them), as outputs name them
    (`shown_under`): the same from any working folder. A path is replaced where it stands
    alone (at the start, or after a space, and followed by `/`, `:`, `;`, `,`, a space or the
    end)."""
    for given in sorted(named, key=lambda p: -len(str(p))):
        text = str(given)
        if text == ".":  # nothing below it carries its prefix (Path(".") / "x" is "x")
            continue
        pattern = r"(?:(?<=^)|(?<=\s))" + re.escape(text) + r"(?=$|[/:;,\s])"
        line = re.sub(pattern, functools.partial(_literal, named[given]), line)
    return line


def _literal(name: str, _: re.Match[str]) -> str:
    """The replacement `name`, taken literally (a backslash in it is no group reference)."""
    return name


def given_line(line: str, named: dict[Path, str]) -> str:
    """The inverse of `shown_line`, for the terminal: the input as the user gave it."""
    for given, name in sorted(named.items(), key=lambda item: -len(item[1])):
        if _starts_with(line, name):
            return str(given) + line[len(name) :]
    return line
