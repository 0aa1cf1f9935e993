"""two cards files -> a diff: the diff as data (model), the sides (sides), cards paired by
shape (matching, matching_loose), why verdicts differ (crossings), `--fail-on` gates (gate)
and the comparison (diff); run-to-run noise is core.noise (classify judges stability by it too).
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "DiffFile",
    "DiffOptions",
    "diff_cards",
]
__getattr__ = lazy_face(
    __name__,
    {
        "DiffFile": "model",
        "DiffOptions": "diff",
        "diff_cards": "diff",
    },
)
