"""The cards file users keep: the card models (model, figures, hot_units, machine), what a
file adds up to (rollup), the file on disk (files) and the legacy format read as it comes
(legacy, legacy_fit). Judges nothing: verdicts/ does.
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "Card",
    "CardFile",
    "KernelCard",
    "card_file_text",
    "load_card_file",
    "write_card_file",
]
__getattr__ = lazy_face(
    __name__,
    {
        "Card": "model",
        "CardFile": "model",
        "KernelCard": "model",
        "card_file_text": "files",
        "load_card_file": "files",
        "write_card_file": "files",
    },
)
