"""Fixtures of the capture tests: the stand-in ncu serving the H200's reports of the compiled
block (`fixtures/compiled_h200`), for captures by time and at a coverage target."""

from __future__ import annotations

import os

import pytest
from helpers import ROOT


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in ncu, serving the H200's reports of the compiled block."""
    monkeypatch.setenv("PATH", f"{ROOT / 'tests' / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(ROOT / "fixtures" / "compiled_h200" / "cap"))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG"):
        monkeypatch.delenv(name, raising=False)
