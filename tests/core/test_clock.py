"""The clock stamps of outputs: one source, ticking under test, pinned by SOURCE_DATE_EPOCH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SMOKE, unstamped

from ncu_classify.cli.entry import run


def _classify(target: Path) -> str:
    assert run(["classify", str(SMOKE), "-o", str(target), "--jobs", "1"]) == 0
    return target.read_text()


def test_every_stamp_ticks_under_test(tmp_path: Path) -> None:
    """The guard of the suite is live: two runs carry two stamps, so a test comparing outputs
    with their stamps fails at once, never once in a while."""
    first, second = _classify(tmp_path / "a.json"), _classify(tmp_path / "b.json")
    stamps = {json.loads(text)["generated_at"] for text in (first, second)}
    assert len(stamps) == 2
    assert first != second and unstamped(first) == unstamped(second)


def test_source_date_epoch_pins_the_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    first, second = _classify(tmp_path / "a.json"), _classify(tmp_path / "b.json")
    assert json.loads(first)["generated_at"] == "2025-12-01T00:00:00+00:00"
    assert first == second  # byte-identical, stamp included


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_source_date_epoch_is_unset(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty is unset; a malformed value is refused (test_small_hardening, issue 37)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    assert json.loads(_classify(tmp_path / "a.json"))["generated_at"].startswith("2026-12-01T00:00")
