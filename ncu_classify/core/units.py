"""Units as ncu prints them, converted to the SI base of their dimension: ncu shows a duration
in whatever of ns, us, ms fits, a size in bytes to GB (and KiB forms), a rate per second or per
cycle. A unit this table does not know raises UnitError rather than guessing a factor.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import Field

# A measured figure that cannot be negative or infinite (a time, a count of bytes, a share).
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]

Dimension = Literal["time", "bytes", "rate", "percent", "count"]


# Scale of each unit to the SI base of its dimension (seconds, bytes, per second).
_TIME = {
    "nsecond": 1e-9,
    "ns": 1e-9,
    "usecond": 1e-6,
    "us": 1e-6,
    "msecond": 1e-3,
    "ms": 1e-3,
    "second": 1.0,
    "s": 1.0,
}


_BYTES = {
    "byte": 1.0,
    "B": 1.0,
    "Kbyte": 1e3,
    "KB": 1e3,
    "Mbyte": 1e6,
    "MB": 1e6,
    "Gbyte": 1e9,
    "GB": 1e9,
    "Tbyte": 1e12,
    "TB": 1e12,
    "Kibyte": 1024.0,
    "KiB": 1024.0,
    "Mibyte": 1024.0**2,
    "MiB": 1024.0**2,
    "Gibyte": 1024.0**3,
    "GiB": 1024.0**3,
}


_HERTZ = {
    "hz": 1.0,
    "Hz": 1.0,
    "hertz": 1.0,
    "Khz": 1e3,
    "KHz": 1e3,
    "kHz": 1e3,
    "Mhz": 1e6,
    "MHz": 1e6,
    "Ghz": 1e9,
    "GHz": 1e9,
}


_PERCENT = {"%", "pct", "percent"}


class UnitError(ValueError):
    """A metric came with a unit this catalog cannot convert."""


def _count_scale(unit: str) -> float:
    """Scale of a count-like unit (cycle, byte, block...); unknown words count as 1 each."""
    if unit in _BYTES:
        return _BYTES[unit]
    prefix = {"K": 1e3, "M": 1e6, "G": 1e9}
    if len(unit) > 1 and unit[0] in prefix and unit[1:] in {"cycle", "inst", "warp", "thread"}:
        return prefix[unit[0]]
    return 1.0


def to_base(value: float, unit: str, dimension: Dimension) -> float:
    """Convert `value` given in `unit` to the SI base of `dimension`; raise UnitError if unsure."""
    unit = unit.strip()
    if dimension == "time":
        if unit not in _TIME:
            raise UnitError(f"unit {unit!r} is not a time")
        return value * _TIME[unit]
    if dimension == "bytes":
        head = unit.split("/")[0]
        if head not in _BYTES:
            raise UnitError(f"unit {unit!r} is not a byte count")
        return value * _BYTES[head]
    if dimension == "rate":
        if unit in _HERTZ:
            return value * _HERTZ[unit]
        head, _, per = unit.partition("/")
        if per not in _TIME:
            raise UnitError(f"unit {unit!r} is not a rate per time")
        return value * _count_scale(head) / _TIME[per]
    if dimension == "percent":
        if unit not in _PERCENT:
            raise UnitError(f"unit {unit!r} is not a percentage")
        return value
    return value * _count_scale(unit.split("/")[0]) if unit else value


@functools.lru_cache(maxsize=256)
def unit_factor(dimension: Dimension, unit: str, per_base: float) -> float:
    """Multiplier from `unit` to a card unit `per_base` times the SI base (cached per unit)."""
    return to_base(1.0, unit, dimension) / per_base
