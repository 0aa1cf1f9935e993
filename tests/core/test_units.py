"""Unit normalisation: every duration and size lands in the card unit whatever ncu printed."""

from __future__ import annotations

import pytest

from ncu_classify.core.metrics import SPECS, derive
from ncu_classify.core.units import UnitError, to_base


@pytest.mark.parametrize(
    ("value", "unit", "expected_us"),
    [
        (140096.0, "nsecond", 140.096),
        (140.096, "usecond", 140.096),
        (0.140096, "msecond", 140.096),
        (140096.0, "ns", 140.096),
        (0.140096, "ms", 140.096),
        (1.5, "second", 1.5e6),
    ],
)
def test_durations_become_microseconds(value: float, unit: str, expected_us: float) -> None:
    assert SPECS["dur_us"].from_report(value, unit) == pytest.approx(expected_us)


@pytest.mark.parametrize(
    ("value", "unit", "expected_mb"),
    [
        (233226496.0, "byte", 233.226496),
        (233226.496, "Kbyte", 233.226496),
        (233.226496, "Mbyte", 233.226496),
        (0.233226496, "Gbyte", 233.226496),
    ],
)
def test_bytes_become_megabytes(value: float, unit: str, expected_mb: float) -> None:
    assert SPECS["dram_read_mb"].from_report(value, unit) == pytest.approx(expected_mb)


def test_per_block_sizes_and_clocks() -> None:
    assert SPECS["smem_dyn_kb"].from_report(221380, "byte/block") == 221.38
    assert SPECS["smem_static_b"].from_report(4.224, "Kbyte/block") == 4224.0
    assert SPECS["sm_clock_ghz"].from_report(1609953292.5623326, "hz") == 1.60995329256
    assert SPECS["sm_clock_ghz"].from_report(1.61, "cycle/nsecond") == pytest.approx(1.61)
    assert SPECS["sm_clock_ghz"].from_report(1610.0, "MHz") == pytest.approx(1.61)


@pytest.mark.parametrize(
    ("key", "unit"),
    [
        ("dur_us", "byte"),
        ("dram_read_mb", "nsecond"),
        ("sm_pct", "byte"),
        ("sm_clock_ghz", "parsec"),
    ],
)
def test_wrong_or_unknown_units_are_refused(key: str, unit: str) -> None:
    with pytest.raises(UnitError):
        SPECS[key].from_report(1.0, unit)


def test_count_prefixes() -> None:
    assert to_base(2.0, "Kcycle", "count") == 2000.0
    assert to_base(7.0, "", "count") == 7.0


def test_derived_ratio_is_none_when_an_input_is_missing() -> None:
    assert derive({"sm_cycles_active": 38827.5, "cycles_elapsed": 44786.0}) == {
        "sm_active_over_elapsed": pytest.approx(0.8669563608270442),
        "persistent": None,
    }
    assert derive({"sm_cycles_active": 1.0, "cycles_elapsed": None, "waves": 1.0}) == {
        "sm_active_over_elapsed": None,
        "persistent": 1.0,
    }
    assert derive({"sm_cycles_active": 1.0, "cycles_elapsed": 0.0, "waves": 1.0004}) == {
        "sm_active_over_elapsed": None,
        "persistent": 0.0,
    }
