"""Issue 15 item 7, what people read: hot units named, never raw counters; the cards table of
the HTML report readable at 1400 px; roof labels that say their file and never overlap; class
names whole in 80-column tables; stages in natural order; a per-stage roll-up that is linear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

from ncu_classify import report_reader
from ncu_classify.cardfile import load_card_file
from ncu_classify.hot_units import KNOWN, describe, name_units

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
H200_REPORTS = sorted(
    p
    for p in (ROOT / "fixtures").rglob("*.ncu-rep*")
    if "public" not in p.parts or "h200" in p.name
)


# --- hot units ------------------------------------------------------------------------------


def test_every_breakdown_entry_of_the_committed_h200_reports_has_a_label(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every member of both breakdowns (all of them, not only the top 3 a card keeps) of every
    committed H200 report, `--metrics` captures and `--set full` ones, is a labelled counter."""
    monkeypatch.setattr(report_reader, "HOT_UNITS", 10**6)
    seen: dict[str, set[str]] = {"sm": set(), "memory": set()}
    for path in H200_REPORTS:
        for kernel in report_reader.read_report(path).kernels:
            for units in name_units(kernel.hot_units).values():
                assert all(u.label != u.unit for u in units), path
            for breakdown, entries in kernel.hot_units.items():
                seen[breakdown].update(unit for unit, _ in entries)
    assert {"fixtures/user_set_full", "fixtures/set_full_h200"} <= {
        str(p.parent.relative_to(ROOT)) for p in H200_REPORTS
    }
    assert (len(seen["sm"]), len(seen["memory"])) == (25, 26)  # as the reports hold them
    unlabelled = sorted((seen["sm"] | seen["memory"]) - set(KNOWN))
    assert unlabelled == []


def test_the_raw_counters_of_the_issue_are_named() -> None:
    assert describe("gpu__compute_memory_access_throughput_internal_activity") == (
        "caches and DRAM (internal activity)",
        "memory",
    )
    assert describe("lts__d_sectors_fill_device") == ("L2 fills from DRAM", "memory")
    assert describe("l1tex__lsuin_requests")[0] == "L1/shared requests from the LSU"


def test_an_unknown_counter_gets_a_label_read_from_its_name() -> None:
    assert describe("lts__d_sectors_fill_peer") == ("L2: d sectors fill peer", "memory")
    assert describe("sm__pipe_fp8_cycles_active") == ("SM: pipe fp8", "other")
    assert describe("nvltx__bytes") == ("NVLink transmit: bytes", "other")
    assert describe("xyz__a_b_cycles_active") == ("XYZ: a b", "other")
    assert describe("oddname")[0] == "oddname (counter without a label)"


def test_cards_written_with_raw_counter_labels_are_shown_labelled(tmp_path: Path) -> None:
    """A cards file written before the labels (label = counter name, as the committed 480x832
    cards had for 22 entries) reads back with the labels."""
    doc = json.loads(WORKLOAD.read_text())
    kernel = doc["cards"][0]["kernels"][0]
    entry = next(
        u
        for u in kernel["hot_units"]["memory"]
        if u["unit"] == "gpu__compute_memory_access_throughput_internal_activity"
    )
    entry["label"] = entry["unit"]
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(doc))
    card = load_card_file(path).cards[0]
    units = card.kernels[0].hot_units["memory"]
    labels = {u.unit: u.label for u in units}
    assert labels[entry["unit"]] == "caches and DRAM (internal activity)"
    assert all(u.label != u.unit for u in units)
