"""Light cards from real counters: a committed capture read as a light batch's report would be
(every metric outside LIGHT_METRICS dropped at read time), every shape marked light, as
tests/capture/test_light.py::test_light_cards_from_real_counters does."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ncu_classify.capture.manifest import read_manifest, write_manifest
from ncu_classify.cards.files import write_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.core.metrics import LIGHT_METRICS, PASSES_METRIC
from ncu_classify.verdicts.rules import LoadedRules


class LightAction:
    """An ncu_report action that answers only the light list's metrics (and the report's own
    attributes: device, replay passes), as a report of a light batch would."""

    KEEP = frozenset(LIGHT_METRICS) | {PASSES_METRIC}

    def __init__(self, action: Any) -> None:
        self._action = action

    def __getattr__(self, name: str) -> Any:
        return getattr(self._action, name)

    def metric_by_name(self, name: str) -> Any:
        if name in self.KEEP or name.startswith("device__attribute"):
            return self._action.metric_by_name(name)
        return None


def light_cards(capture: Path, rules: LoadedRules, work: Path) -> CardFile:
    """The cards of `capture` (a copy in `work / "cap"`) with every shape captured light."""
    pytest.importorskip("ncu_report")
    import ncu_classify.read.kernels as kernels
    from ncu_classify.verdicts.classify import classify

    folder = work / "cap"
    shutil.copytree(capture, folder)
    manifest = read_manifest(folder / "manifest.json")
    for shape in manifest.shapes:
        shape.light = True
    write_manifest(folder, manifest)
    read = kernels.read_kernel
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            kernels, "read_kernel", lambda action, *a, **k: read(LightAction(action), *a, **k)
        )
        return classify([folder], rules, jobs=1)


def light_cards_file(capture: Path, rules: LoadedRules, work: Path) -> Path:
    """`light_cards`, written as a cards file in `work`."""
    path = work / "light.json"
    write_card_file(path, light_cards(capture, rules, work))
    return path
