"""Shared vocabulary of every step: the exception tree, bounded reading of user files
(text, YAML, JSON positions), atomic writes, printable and Markdown-safe text, the clock, stage
order, the metric catalog and its units, the roofline counters, typed machine facts. Imports
nothing of ours outside core/.
"""

from __future__ import annotations

from .lazy import lazy_face

__all__ = [
    "CATALOG",
    "CardsError",
    "Facts",
    "NcuClassifyError",
    "utc_now",
]
__getattr__ = lazy_face(
    __name__,
    {
        "CATALOG": "metrics",
        "CardsError": "errors",
        "Facts": "facts",
        "NcuClassifyError": "errors",
        "utc_now": "clock",
    },
)
