"""`diff` of a capture with light cards (`capture --light-after`) against a full capture of the
same shapes: a verdict the light list could not reach (l2_bandwidth_bound -> unresolved with
sm_pct / l2_pct unmeasured) is `captured_light`, not a flip of the program, as a shape below
one side's coverage target is `below_target`.

The light cards are the committed Wan 14B H200 capture (fixtures/record_h200_wan14b) read with
every metric outside LIGHT_METRICS dropped at read time, as tests/capture/test_light.py does."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT
from helpers_light import light_cards_file

from ncu_classify.cards.files import load_card_file, write_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.compare.diff import DiffOptions, diff_cards
from ncu_classify.compare.gate import failures, parse_condition
from ncu_classify.compare.model import DiffFile
from ncu_classify.compare.sides import readable_rules
from ncu_classify.core.noise import load_noise
from ncu_classify.verdicts.rules import LoadedRules

WAN = ROOT / "fixtures" / "record_h200_wan14b"
CAT = "output:aten.cat.default:1x3x1x480x832:fp32"
AT = "2026-12-05T00:00:00+00:00"
CHANGED = ("flipped", "within_noise", "missing_metric", "unclassified")


@pytest.fixture(scope="module")
def light_wan(rules: LoadedRules, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Wan 14B capture's cards, every shape read as a light batch's report would be."""
    return light_cards_file(WAN, rules, tmp_path_factory.mktemp("light"))


@pytest.fixture(scope="module")
def full_wan(wan: CardFile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("full") / "full.json"
    write_card_file(path, wan)
    return path


def _diff(baseline: Path, candidate: Path) -> DiffFile:
    sides = load_card_file(baseline), load_card_file(candidate)
    options = DiffOptions(noise=load_noise()[0], known_rules=readable_rules(sides[0]))
    return diff_cards(*sides, (str(baseline), str(candidate)), options, at=AT)


@pytest.mark.filterwarnings("ignore")
def test_a_light_capture_against_a_full_one_is_no_flip(light_wan: Path, full_wan: Path) -> None:
    """Full baseline, light candidate of the same 253 shapes: the 61 verdicts the light list
    changed (53 l2_bandwidth_bound and 2 latency ones unresolved, 6 L2-bound read as tails)
    are `captured_light`, none a flip, missing_metric or within_noise (one read as flipped
    with 'thresholds unknown', so --fail-on flip failed the gate); the 192 others stay same
    (the 49 compute-bound ones too, decided without sm_pct by the tensor pipe or instruction
    issue); a warning says why."""
    diff = _diff(full_wan, light_wan)
    assert diff.counts == {"captured_light": 61, "same": 192}
    for shape in diff.shapes:
        assert shape.baseline is not None and shape.candidate is not None
        differs = shape.baseline.primary != shape.candidate.primary
        assert shape.change == ("captured_light" if differs else "same")
    (cat,) = [s for s in diff.shapes if s.candidate is not None and s.candidate.group == CAT]
    assert cat.why is not None and cat.why.startswith(
        "l2_bandwidth_bound -> unresolved_no_dominant_limiter"
    )
    assert "the candidate was captured with the light metric list" in cat.why
    assert "thresholds unknown" not in cat.why
    assert any(
        w.startswith("the candidate has 253 cards captured with the light metric list")
        for w in diff.warnings
    )
    assert failures(diff, [parse_condition("flip")]) == []
    assert failures(diff, [parse_condition("any")]) == []


@pytest.mark.filterwarnings("ignore")
def test_light_against_light_and_the_other_way(light_wan: Path, full_wan: Path) -> None:
    """Light against light compares like with like (every shape same, no warning); light as
    the baseline reads the same changes the other way round; the CLI gate passes."""
    same = _diff(light_wan, light_wan)
    assert same.counts == {"same": 253}
    assert not any("light metric list" in w for w in same.warnings)
    back = _diff(light_wan, full_wan)
    assert back.counts == {"captured_light": 61, "same": 192}
    assert not any(s.change in CHANGED for s in back.shapes)
    argv = ["diff", str(full_wan), str(light_wan), "--fail-on", "flip", "-o", "-"]
    assert run([*argv, "--format", "json"]) == 0
