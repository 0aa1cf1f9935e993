"""Two cards files -> a diff; run-to-run noise is core.noise (classify judges stability by it too).

model           the diff as data (what `diff --format json` writes)
sides           the two sides: rules, headers (GPU, clocks, ceilings, software)
matching        cards paired by group id, then shape, then position
matching_loose  cards of loose reports paired by what they hold
crossings       why verdicts differ: the first rule whose truth differs
intervals       two repeated captures compared by their intervals
headroom_diff   headroom before and after, per stage
gate            `diff --fail-on` conditions
diff            the comparison itself
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
