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


MANIFEST = ROOT / "fixtures" / "workload_h200_480x832" / "manifest.json"


def test_one_machine_model_in_each_documents_own_spelling() -> None:
    """The manifest's host and the cards' captures are one model (`Machine`): the GPU is `gpu`
    in code, `gpu_name` in the manifest as published, `gpu` in the cards; both files are
    written back with their keys in their own order, byte for byte."""
    from ncu_classify.capture.manifest import HostInfo, read_manifest
    from ncu_classify.cards.machine import CaptureInfo
    from ncu_classify.core.facts import Machine

    assert issubclass(HostInfo, Machine) and issubclass(CaptureInfo, Machine)
    host = read_manifest(MANIFEST).host
    assert (host.gpu, host.sm_count, host.cudnn) == ("NVIDIA H200", 132, 91900)
    published = json.loads(MANIFEST.read_text())["host"]
    assert json.dumps(json.loads(host.model_dump_json())) == json.dumps(published)
    capture = load_card_file(CARDS).captures[0]
    assert capture.machine() | {"driver": None} == host.machine() | {"driver": None}
    # a fact of an odd kind under its published name is kept aside, as any fact is
    odd = HostInfo.model_validate({"gpu_name": 5, "sm_count": 132})
    assert odd.gpu is None
    assert json.loads(odd.model_dump_json()) == {"sm_count": 132, "as_given": {"gpu_name": 5}}
