"""tensor_pct is the tensor pipe over elapsed cycles, like sm_pct (issue 8, item 1).

The captures so far recorded only the figure over *active* cycles, which inflates kernels that
leave SMs idle; it is converted exactly (active x sm__cycles_active.avg / sm__cycles_elapsed.avg)
and kept as tensor_active_pct.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.model import UNRESOLVED
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.judge import reclassify
from ncu_classify.verdicts.rules import LoadedRules

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832_40heads"
PARTIAL_WAVE_CONV = "vae:conv3d:in1x384x3x60x26_w768x384x3x1x1_s1x1x1_p0x0x0:fp32:tf32"


@pytest.fixture(scope="module")
def workload(rules: LoadedRules):  # type: ignore[no-untyped-def]
    return {c.group: c for c in classify([WORKLOAD], rules, jobs=2).cards}


def test_a_partial_wave_conv_is_no_longer_compute_bound(workload) -> None:  # type: ignore[no-untyped-def]
    """0.59 waves: the tensor pipe is busy 63% of the cycles its SMs were active, 32% of the
    elapsed ones; the legacy pipeline called it a partial-wave tail, and so do we now."""
    card = workload[PARTIAL_WAVE_CONV]
    gemm = next(k for k in card.kernels if k.kernel == card.dominant_kernel)
    assert gemm.metrics["tensor_active_pct"] == pytest.approx(63.036825148505486)
    assert gemm.metrics["tensor_pct"] == pytest.approx(32.2467889941)
    assert gemm.metrics["waves"] == pytest.approx(0.59, abs=0.01)
    assert (card.primary, gemm.classification) == ("partial_wave_tail", "partial_wave_tail")
    # the identity, on this kernel's own counters
    m = gemm.metrics
    assert m["tensor_pct"] == pytest.approx(
        m["tensor_active_pct"] * m["sm_cycles_active"] / m["sm_cycles_elapsed"], rel=1e-11
    )
    assert m["sm_cycles_elapsed"] == pytest.approx(m["sm_clock_ghz"] * m["dur_us"] * 1e3)


def test_every_change_of_verdict_in_the_480x832_workload(workload) -> None:  # type: ignore[no-untyped-def]
    """Three conv3d cards were compute-bound on the inflated figure alone."""
    committed_before = {  # primary classes under the active figure (schema 1.1 cards)
        "vae:conv3d:in1x192x3x122x54_w384x192x3x3x3_s1x1x1_p0x0x0:fp32:tf32": "compute_bound",
        "vae:conv3d:in1x384x3x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32": "compute_bound",
        PARTIAL_WAVE_CONV: "compute_bound",
    }
    # Under the legacy rules now: the first two are persistent grids (132 CTAs, waves exactly
    # 1.00) whose SMs idle, which the legacy rules have no class for; the third a real tail.
    after = [UNRESOLVED, UNRESOLVED, "partial_wave_tail"]
    for (group, before), now in zip(committed_before.items(), after, strict=True):
        card = workload[group]
        gemm = next(k for k in card.kernels if k.kernel == card.dominant_kernel)
        assert before != card.primary == now
        assert (gemm.metrics["waves"] == 1.0) == (now != "partial_wave_tail")
        assert gemm.metrics["tensor_active_pct"] >= 60 > gemm.metrics["tensor_pct"]


def test_old_cards_are_upgraded_on_load(tmp_path: Path, rules: LoadedRules) -> None:
    """A schema 1.1 file (tensor_pct over active cycles) reads as 1.2: the active figure moves
    to tensor_active_pct and tensor_pct is recomputed from the kernel's own figures; reclassify
    then gives the corrected verdicts."""
    current = json.loads((WORKLOAD / "cards.json").read_text())
    old = json.loads((WORKLOAD / "cards.json").read_text())
    old["schema_version"] = "1.1"
    for card in old["cards"]:
        for kernel in card["kernels"]:
            m, s = kernel["metrics"], kernel["metric_sources"]
            m["tensor_pct"] = m.pop("tensor_active_pct")
            s["tensor_pct"] = s.pop("tensor_active_pct")
            del m["sm_cycles_elapsed"], s["sm_cycles_elapsed"]
            kernel["evidence"]["tensor_pct"] = m["tensor_pct"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    upgraded = load_card_file(path)
    assert upgraded.schema_version == "1.10"
    for new, ref in zip(upgraded.cards, current["cards"], strict=True):
        for kernel, expected in zip(new.kernels, ref["kernels"], strict=True):
            for key in ("tensor_pct", "tensor_active_pct", "sm_cycles_elapsed"):
                assert kernel.metrics[key] == pytest.approx(expected["metrics"][key], rel=1e-9)
    redone = reclassify(upgraded, rules)
    assert [c.primary for c in redone.cards] == [c["primary"] for c in current["cards"]]
