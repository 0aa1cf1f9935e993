"""Machine facts of a real cards file, hand-edited: a fact of an odd kind is kept under
`as_given` and read as unknown, never a reason to refuse the file; facts this version does not
name are kept; what was written comes back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ROOT

from ncu_classify.cards.files import card_file_text, load_card_file
from ncu_classify.cards.machine import GpuInfo
from ncu_classify.cli.entry import run

CARDS = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"


def test_a_hand_edited_gpu_is_read_and_kept(tmp_path: Path) -> None:
    doc = json.loads(CARDS.read_text())
    gpu = doc["cards"][0]["gpu"]
    assert gpu["sm_clock_max_khz"] == 1980000 and gpu["name"] == "NVIDIA H200"
    gpu["sm_clock_max_khz"] = "1980000"  # text where a number belongs
    gpu["hbm_stacks"] = 6  # a fact this version does not name
    edited = tmp_path / "cards.json"
    edited.write_text(json.dumps(doc))
    cards = load_card_file(edited)
    first = cards.cards[0].gpu
    assert first.sm_clock_max_khz is None and first.max_khz("sm_clock_max_khz") is None
    assert first.model_dump()["as_given"] == {"sm_clock_max_khz": "1980000"}
    assert first.model_dump()["hbm_stacks"] == 6
    again = tmp_path / "again.json"
    again.write_text(card_file_text(cards))
    assert card_file_text(load_card_file(again)) == again.read_text()  # stable once read
    assert run(["reclassify", str(edited), "-o", str(tmp_path / "r.json")]) == 0


def test_an_as_given_of_another_kind_is_kept_too() -> None:
    info = GpuInfo.model_validate({"name": 3, "as_given": 5})
    assert info.model_dump() == {"as_given": {"as_given": 5, "name": 3}}
    assert GpuInfo().model_dump() == {} and not GpuInfo().holds()
