"""Text that comes from users' files, made safe for a terminal and for one-line messages.

Group ids, stage names, kernel names and paths come from files anyone can write. Printed raw, an
escape sequence in them would drive the terminal and a newline would split an error line, so
control characters are shown escaped (`\\x1b`, `\\n`) instead.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

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


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A CSV cell: None is empty, text is printable and cannot start a formula (a leading `'`
    is added, as spreadsheets show it); numbers and booleans are kept."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = printable(value)
        return "'" + text if text.startswith(_FORMULA_START) else text
    return value


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """CSV text (header first, `\\n` line ends) with every cell made safe by `csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()
