"""What the CLI prints on a real terminal of a given width (a pseudo-terminal, COLUMNS set), and
the cells of the tables in a text, for the tests of tables that must not alter a figure."""

from __future__ import annotations

import os
import pty
import re
import subprocess

from helpers import CLI, ROOT

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(args: list[str], columns: int) -> tuple[int, str]:
    """The exit code and what `ncu-classify ARGS` writes to a `columns`-wide terminal on its
    stdout (escape sequences and carriage returns removed)."""
    main, child = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "PYTHONPATH": str(ROOT)}
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [*CLI, *args], stdout=child, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    code = proc.wait(timeout=300)
    os.close(main)
    text = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    return code, _ESCAPE.sub("", text)


def tables(text: str) -> list[list[str]]:
    """The lines of each box table in `text` (from its top border to its bottom one)."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("┏"):
            current = [line]
        elif current is not None:
            current.append(line)
            if line.startswith("└"):
                found.append(current)
                current = None
    return found


def headers(table: list[str]) -> list[str]:
    """Each column's header, its lines joined by spaces."""
    lines = [line.split("┃")[1:-1] for line in table if line.startswith("┃")]
    return [" ".join(p.strip() for p in parts if p.strip()) for parts in zip(*lines, strict=True)]


def row_lines(table: list[str]) -> list[list[str]]:
    """The cells of each body line of a table (a row that wraps takes several lines)."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in table if line.startswith("│")]


def column(table: list[str], name: str) -> list[str]:
    """The non-empty cells of the column headed `name`, one per body line, top to bottom."""
    index = headers(table).index(name)
    return [cells[index] for cells in row_lines(table) if cells[index]]
