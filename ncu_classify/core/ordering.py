"""The order stages are shown in: first-seen (a capture's stages come in the pipeline's order:
dit, vae, attention, output), except that stages whose names differ only in their numbers are
in numeric order (n0, n1, n2, ..., n10, not n0, n1, n10, n2), at the place of the first one."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBER = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key reading each run of digits as a number: n2 < n10, a9b < a10a."""
    return tuple(
        (0, int(part), part) if part.isdigit() else (1, 0, part)
        for part in _NUMBER.split(text)
        if part
    )


def stage_order(stages: Iterable[str]) -> list[str]:
    """The distinct stages, in the order to show them (see the module's docstring)."""
    distinct = list(dict.fromkeys(stages))
    family: dict[str, int] = {}
    for stage in distinct:
        family.setdefault(_NUMBER.sub("#", stage), len(family))
    return sorted(distinct, key=lambda s: (family[_NUMBER.sub("#", s)], natural_key(s)))
