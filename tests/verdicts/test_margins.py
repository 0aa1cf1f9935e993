"""Margins: how far a verdict is from its threshold and from the nearest rival rule, and the
borderline flag (issue 8, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import QUIET_EVIDENCE, ROOT

from ncu_classify.core.errors import RulesError
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.margins import verdict_margin
from ncu_classify.verdicts.rules import LoadedRules, load_rules

FULL = QUIET_EVIDENCE


def test_margin_of_a_clear_and_of_a_borderline_verdict(rules: LoadedRules) -> None:
    clear = verdict_margin(rules.rules, "compute_bound", {**FULL, "sm_pct": 95.0})
    assert (clear.metric, clear.distance, clear.borderline) == ("sm_pct", 35.0, False)
    close = verdict_margin(rules.rules, "l2_bandwidth_bound", {**FULL, "l2_pct": 61.0})
    assert (close.metric, close.distance) == ("l2_pct", 1.0)
    assert close.alternative == "unresolved_no_dominant_limiter" and close.borderline
    # unresolved at l2 58.5: the L2 rule is 1.5 points away, within the 2-point margin
    near = verdict_margin(rules.rules, "unresolved_no_dominant_limiter", {**FULL, "l2_pct": 58.5})
    assert (near.alternative, near.alternative_metric, near.alternative_distance) == (
        "l2_bandwidth_bound",
        "l2_pct",
        1.5,
    )
    assert near.borderline and near.metric is None


def test_the_96_channel_convs_are_flagged(rules: LoadedRules) -> None:
    """The two 480x832 convs whose class flips run to run (l2_pct 60 +- 0.5 and 58.1)."""
    folder = ROOT / "fixtures" / "workload_h200_480x832_40heads"
    cards = {c.group: c for c in classify([folder], rules, jobs=1).cards}
    flagged = {}
    for group in (
        "vae:conv3d:in1x96x3x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32",
        "vae:conv3d:in1x96x6x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32",
    ):
        card = cards[group]
        kernel = next(k for k in card.kernels if k.kernel == card.dominant_kernel)
        margin = kernel.margin
        flagged[group[15:31]] = (card.primary, margin.alternative, margin.alternative_distance)
        assert margin.borderline and margin.alternative_metric == "l2_pct"
        assert abs(kernel.metrics["l2_pct"] - 60) == pytest.approx(margin.alternative_distance)
    assert flagged == {
        "96x3x482x210_w96": ("l2_bandwidth_bound", "unresolved_no_dominant_limiter", 0.472318),
        "96x6x482x210_w96": ("unresolved_no_dominant_limiter", "l2_bandwidth_bound", 1.94603),
    }


def test_borderline_margins_are_validated(tmp_path: Path) -> None:
    text = (ROOT / "rules" / "default.yaml").read_text()
    bad = tmp_path / "r.yaml"
    bad.write_text(text.replace("waves: 0.1}", "wavez: 0.1}"))
    with pytest.raises(RulesError, match=r"unknown metric 'wavez' in borderline margins"):
        load_rules(bad)
    bad.write_text(text.replace("waves: 0.1}", "waves: -1}"))
    with pytest.raises(RulesError, match=r"borderline.waves: Input should be greater than 0"):
        load_rules(bad)
