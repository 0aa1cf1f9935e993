"""Kernel rows -> classified cards.

rules         threshold rules as data (YAML, no eval)
margins       how close a verdict is to another
roofline      a kernel's and a card's roofline from its own counters
tiles         tiles of a persistent grid
drill         drill-down figures: stall shares, the settle rules
repeats       repeated measurements onto cards, stable or not
coverage      the cards set against the recorded program
judge         the one place a verdict is decided; reclassify
inputs        what classify reads: files and folders -> report sets
parts         a capture read in part: reports of a capture folder given as files
group_ids     group ids read back into manifest shapes (folders without a manifest)
unmanifested  capture folders read without their manifest.json
shards        is a split capture whole
drill_merge   a drill-down capture folded into the cards it drills
unfinished    the kernels of a shape a stopped capture did not finish
classify      reports or capture folders -> classified cards
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
