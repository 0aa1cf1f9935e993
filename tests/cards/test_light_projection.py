"""`project` of light cards (capture --light-after): a light kernel projects only by the rules
its counters carry (dram, waves); the rest are listed with why, not projected by a rule its
class fell back to for want of sm_pct, l2_pct or FLOPs (onto an A100 a light TF32 conv read
compute_bound took the clock x SMs rule, 210 us, where its full card's FLOP roof gives 389 us).

The light cards are the committed Wan 14B H200 capture read with LIGHT_METRICS alone."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from helpers import ROOT
from helpers_light import light_cards_file

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.gpus import gpu_spec
from ncu_classify.cards.model import CardFile
from ncu_classify.cards.projection import LIGHT_RULES, project
from ncu_classify.verdicts.rules import LoadedRules

WAN = ROOT / "fixtures" / "record_h200_wan14b"


@pytest.mark.filterwarnings("ignore")
def test_light_kernels_project_by_the_rules_their_counters_carry(
    rules: LoadedRules, wan: CardFile, tmp_path: Path
) -> None:
    """Of the 392 kernels of the light Wan cards, 101 project by the dram rule and 83 by the
    waves one (the factor their full twins get where both take it); 148 unresolved ones (the
    latency rule) and 60 compute-bound ones, decided by the tensor pipe or instruction issue
    (no FLOP roof: the sm_throughput rule), are listed with why. Before, all 392 projected.
    (3 kernels read DRAM-bound before issue_pct bounded sm_pct, and projected by the dram rule.)"""
    light = load_card_file(light_cards_file(WAN, rules, tmp_path))
    source, target = gpu_spec("H200"), gpu_spec("A100-SXM4-80GB")
    done = project(light, "light.json", source, target)
    full = project(wan, "full.json", source, target)
    assert done.projection is not None
    kernels = [(c, k) for c in done.cards for k in c.kernels]
    rules_used = collections.Counter(k.projection.rule for _, k in kernels if k.projection)
    assert set(rules_used) - {None} <= set(LIGHT_RULES)
    whys = [u.why for u in done.projection.unprojected]
    assert whys and all("captured with the light metric list" in w for w in whys)
    assert done.projection.projected_kernels == sum(n for r, n in rules_used.items() if r)
    assert [c.group for c in done.cards] == [c.group for c in full.cards]
    pairs = [
        (mine.projection, other.projection)
        for card, twin in zip(done.cards, full.cards, strict=True)
        for mine, other in zip(card.kernels, twin.kernels, strict=True)
    ]
    waves = [(a, b) for a, b in pairs if a and b and a.rule == b.rule == "waves"]
    assert waves and all(a.factor == b.factor for a, b in waves)
    assert rules_used == {None: 208, "dram": 101, "waves": 83}
    unprojected = collections.Counter(
        k.classification for _, k in kernels if k.projection and k.projection.rule is None
    )
    assert unprojected == {"unresolved_no_dominant_limiter": 148, "compute_bound": 60}
