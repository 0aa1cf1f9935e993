"""kernel rows -> classified cards: the rules as data (rules), their margins (margins), the
roofline of a kernel and of a card (roofline), the one place a verdict is decided and
reclassify (judge), what classify reads (inputs) and classify itself (classify).
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "LoadedRules",
    "load_rules",
    "reclassify",
]
__getattr__ = lazy_face(
    __name__,
    {
        "LoadedRules": "rules",
        "load_rules": "rules",
        "reclassify": "judge",
    },
)
