"""Text that comes from users' files, made safe for a terminal and for one-line messages.

Group ids, stage names, kernel names and paths come from files anyone can write. Printed raw, an
escape sequence in them would drive the terminal and a newline would split an error line, so
control characters are shown escaped (`\\x1b`, `\\n`) instead.
"""

from __future__ import annotations

_CONTROL = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
_ESCAPES = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _CONTROL}
_KEEP_LINES = {**_ESCAPES, ord("\n"): None}
_KEEP_LINES.pop(ord("\n"))


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (newlines kept if asked)."""
    return text.translate(_KEEP_LINES if keep_newlines else _ESCAPES)


def one_line(text: str) -> str:
    """`text` as one printable line: newlines and other control characters escaped."""
    return printable(text)
