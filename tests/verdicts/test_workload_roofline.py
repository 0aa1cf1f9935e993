"""The corrected workload, captured on the H200 with the roofline counters (issue 8, item 6):
10 attention heads, FlashAttention-3 for the flash_attn_v3 rows, fp32 -> uint8 output casts;
checked against the legacy cards' own evidence."""

from __future__ import annotations

import json

import pytest
from helpers import LEGACY, ROOT

from ncu_classify.shapes.file import load_shapes
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="module")
def cards(rules: LoadedRules) -> dict:
    return {
        r: classify([FIXTURES / f"workload_h200_{r}"], rules, jobs=2).cards
        for r in ("480x832", "704x1280")
    }


@pytest.mark.parametrize(
    ("resolution", "shapes", "kernels"), [("480x832", 34, 78), ("704x1280", 33, 77)]
)
def test_every_shape_carries_the_roofline_and_its_hot_unit(
    cards: dict, resolution: str, shapes: int, kernels: int
) -> None:
    expected = [
        e.group for e in load_shapes(FIXTURES / "shapes" / f"workload_{resolution}.yaml").entries()
    ]
    got = cards[resolution]
    assert [c.group for c in got] == expected and len(got) == shapes
    assert sum(len(c.kernels) for c in got) == kernels
    manifest = json.loads((FIXTURES / f"workload_h200_{resolution}" / "manifest.json").read_text())
    assert {p for s in manifest["shapes"] for p in s["replay_passes"]} == {12}
    for card in got:
        top = next(k for k in card.kernels if k.kernel == card.dominant_kernel)
        assert top.roofline.binding is not None and top.roofline.pct_of_roof is not None
        assert top.roofline.missing == [] and top.hot_units["sm"] and top.hot_units["memory"]


def test_attention_matches_the_legacy_rank(cards: dict) -> None:
    """FA3 at 10 heads reads what the legacy flash_attn_v3 rows read: 36.6 and 185.0 MB."""
    legacy = {c["group"]: c for c in json.loads(LEGACY.read_text())["cards"]}
    fa3 = [c for c in cards["480x832"] if c.op == "flash_attn_v3"]
    assert [c.shape_parameters["backend_used"] for c in fa3] == ["fa3_fwd", "fa3_fwd"]
    for card, name in zip(
        fa3, ("attention:480_short:fa3:self", "attention:480_long:fa3:self"), strict=True
    ):
        old = next(
            k for k in legacy[name]["kernels"] if k["kernel"].startswith("void device_kernel")
        )
        ours = card.kernels[0].metrics
        assert ours["dram_read_mb"] == pytest.approx(old["metrics"]["dram_read_mb"], rel=0.02)
        assert ours["dur_us"] == pytest.approx(old["metrics"]["dur_us"], rel=0.07)


def test_output_casts_match_the_legacy_evidence(cards: dict) -> None:
    """fp32 -> uint8 of 9 and 12 frames: the unrolled kernel at the legacy 9.97 and 13.3 waves."""
    legacy = [c for c in json.loads(LEGACY.read_text())["cards"] if c["stage"] == "output"]
    casts = [c for c in cards["480x832"] if c.stage == "output"]
    for card, old in zip(casts, legacy, strict=True):
        kernel = card.kernels[0]
        assert kernel.function_name == "unrolled_elementwise_kernel"
        assert kernel.metrics["waves"] == pytest.approx(
            old["kernels"][0]["evidence"]["waves"], abs=0.01
        )
        assert card.summed_kernel_us == pytest.approx(old["summed_kernel_us"], rel=0.05)
        assert kernel.roofline.binding == "dram"
