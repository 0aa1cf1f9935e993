"""The first full 480x832 and 704x1280 workload capture on the H200 by `capture` (issue 3): 40
attention heads, no roofline counters; kept as `*_40heads` beside the corrected capture."""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, unstamped

from ncu_classify.shapes.file import load_shapes
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

SHAPES = ROOT / "fixtures" / "shapes"


@pytest.mark.parametrize(
    ("resolution", "shapes", "kernels"), [("480x832", 34, 78), ("704x1280", 33, 77)]
)
def test_every_shape_of_the_workload_has_its_card(
    rules: LoadedRules, resolution: str, shapes: int, kernels: int
) -> None:
    folder = ROOT / "fixtures" / f"workload_h200_{resolution}_40heads"
    cards = classify([folder], rules, jobs=2)
    expected = [
        e.group for e in load_shapes(SHAPES / f"workload_{resolution}_40heads.yaml").entries()
    ]
    assert [c.group for c in cards.cards] == expected and len(expected) == shapes
    assert cards.input_errors == [] and all(c.error is None for c in cards.cards)
    assert sum(len(c.kernels) for c in cards.cards) == kernels
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [s["kernels"] for s in manifest["shapes"]] == [len(c.kernels) for c in cards.cards]
    assert {p for s in manifest["shapes"] for p in s["replay_passes"]} == {9}


def test_legacy_flash_attention_maps_to_the_backend_that_ran(rules: LoadedRules) -> None:
    cards = classify([ROOT / "fixtures" / "workload_h200_704x1280_40heads"], rules, jobs=1).cards
    attention = [c for c in cards if c.stage == "attention"]
    assert [(c.op, c.shape_parameters["backend_used"]) for c in attention] == [
        ("flash_attn_v2", "sdpa_flash"),
        ("flash_attn_v3", "sdpa_cudnn"),
    ] * 3
    # FA2 code vs cuDNN's Hopper wgmma kernel on the long self-attention: 37.8 ms vs 19.6 ms.
    assert [c.summed_kernel_us for c in attention[2:4]] == [37765.664, 19579.2]
    assert [c.primary for c in attention[2:4]] == [
        "unresolved_no_dominant_limiter",
        "compute_bound",
    ]


@pytest.mark.parametrize(
    "resolution", ["480x832_40heads", "704x1280_40heads", "480x832", "704x1280"]
)
def test_committed_cards_are_what_classify_writes(
    rules: LoadedRules, resolution: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cards under fixtures/ are reproducible byte for byte, apart from generated_at."""
    from ncu_classify.cards.files import write_card_file

    monkeypatch.chdir(ROOT)
    folder = f"fixtures/workload_h200_{resolution}"
    fresh = tmp_path / "cards.json"
    write_card_file(fresh, classify([ROOT.joinpath(folder).relative_to(ROOT)], rules, jobs=2))
    committed = (ROOT / folder / "cards.json").read_text()
    assert unstamped(fresh.read_text()) == unstamped(committed)
