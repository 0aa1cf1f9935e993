"""Text that comes from users' files, made safe for a terminal and for one-line messages.

Group ids, stage names, kernel names and paths come from files anyone can write. Printed raw, an
escape sequence in them would drive the terminal and a newline would split an error line, so
control characters are shown escaped (`\\x1b`, `\\n`) instead. The same text in a Markdown
cell is escaped so that it stays text (the diff's and the report's Markdown forms).
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, line/paragraph separators, and the bidirectional marks, embeddings,
# overrides and isolates, which reorder what a terminal shows (a "Trojan Source" name).
_CONTROL = [
    *range(0x00, 0x20),
    0x7F,
    *range(0x80, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_ESCAPES = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _CONTROL}
# Bytes of a file name that are not UTF-8 reach Python as lone surrogates (U+DC80-U+DCFF,
# PEP 383); they are shown as the byte they stand for (`\xff`).
_ESCAPES.update({code: f"\\x{code - 0xDC00:02x}" for code in range(0xDC80, 0xDD00)})
_KEEP_LINES = {code: text for code, text in _ESCAPES.items() if code != ord("\n")}


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (newlines kept if asked)."""
    return text.translate(_KEEP_LINES if keep_newlines else _ESCAPES)


def unicode_safe(text: str) -> str:
    """`text` that can be written as UTF-8 (JSON, files): a path's bytes that are not UTF-8
    (held as surrogates) become `\\xff` escapes, other text is unchanged."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name gives
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(text: str) -> str:
    """`text` as one printable line: newlines and other control characters escaped."""
    return printable(text)


def md_code(text: str) -> str:
    """`text` as a Markdown code span inside a table cell, never markup: the fence is longer
    than any run of backticks in it (so the text cannot close the span), pipes are escaped."""
    clean = printable(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", clean)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if clean.startswith("`") or clean.endswith("`") else ""
    return f"{fence}{pad}{clean}{pad}{fence}"


def md_text(text: str) -> str:
    """Plain text for a Markdown cell: pipes, angle brackets and markup characters escaped."""
    out = printable(text).replace("\\", "\\\\")
    for char in "|<>*_`[]#":
        out = out.replace(char, "\\" + char)
    return out


def figure(value: float | None, spec: str = "{:,.1f}") -> str:
    """A number for people; `-` when missing, 4 significant digits when far out of range."""
    if value is None:
        return "-"
    if abs(value) >= 1e12 or (value and abs(value) < 1e-4):
        return f"{value:.4g}"
    return spec.format(value)


def counted(count: int, noun: str) -> str:
    """`count` things, the noun in the singular for one: `1 kernel`, `2 kernels`, `1,024 cards`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
