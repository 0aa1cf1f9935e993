"""Rules as data: validation, first-match evaluation, missing metrics, the legacy verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import QUIET_EVIDENCE, ROOT

from ncu_classify.cards.files import load_card_file
from ncu_classify.core.errors import RulesError
from ncu_classify.verdicts.judge import reclassify
from ncu_classify.verdicts.rules import DEFAULT_RULES, LoadedRules, evaluate, load_rules

FULL = {**QUIET_EVIDENCE, "persistent": 0.0}  # derived from waves by kernel_values


def test_packaged_rules_are_the_repository_rules() -> None:
    assert DEFAULT_RULES.read_bytes() == (ROOT / "rules" / "default.yaml").read_bytes()


def test_default_rules_in_legacy_order(rules: LoadedRules) -> None:
    assert [r.name for r in rules.rules.rules] == [
        "compute_bound",
        "dram_bandwidth_bound",
        "l2_bandwidth_bound",
        "partial_wave_tail",
        "latency_or_occupancy_limited",
        "unresolved_no_dominant_limiter",
    ]
    assert rules.rules.id == "legacy-v1" and len(rules.sha256) == 64


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"sm_pct": 60.0}, "compute_bound"),
        ({"tensor_pct": 75.0, "dram_pct": 90.0}, "compute_bound"),  # first match wins
        ({"dram_pct": 60.0, "l2_pct": 90.0}, "dram_bandwidth_bound"),
        ({"l2_pct": 60.0, "dram_pct": 59.9}, "l2_bandwidth_bound"),
        ({"sm_active_over_elapsed": 0.84, "waves": 1.5}, "partial_wave_tail"),
        ({"sm_active_over_elapsed": 0.84, "waves": 1.51}, "unresolved_no_dominant_limiter"),
        ({"warps_active_pct": 24.9}, "latency_or_occupancy_limited"),
        ({"waves": 0.9, "sm_active_over_elapsed": 0.9}, "latency_or_occupancy_limited"),
        ({}, "unresolved_no_dominant_limiter"),
    ],
)
def test_thresholds(rules: LoadedRules, change: dict, expected: str) -> None:
    assert evaluate(rules.rules, {**FULL, **change}).rule.name == expected


def test_missing_metric_is_listed_and_never_a_zero(rules: LoadedRules) -> None:
    """With tensor_pct and sm_pct missing, `all < 40` is unknown: the latency rule does not
    fire on the measured half of its evidence (a 0 would have let it pass as if checked); we
    list them. With sm_pct measured at 10 %, tensor_pct < 40 holds by definition (sm__throughput
    is the maximum of its sub-units, the tensor pipe among them) and the rule fires."""
    values = {**FULL, "warps_active_pct": 10.0, "tensor_pct": None, "sm_pct": None}
    verdict = evaluate(rules.rules, values)
    assert verdict.rule.name == "unresolved_no_dominant_limiter"
    assert verdict.unchecked == ["sm_pct", "tensor_pct"]
    bounded = evaluate(rules.rules, {**values, "sm_pct": 10.0})
    assert (bounded.rule.name, bounded.unchecked) == ("latency_or_occupancy_limited", [])
    values["sm_pct"] = 10.0
    # An `any` settled by a measured member fires; the missing member did not matter.
    verdict = evaluate(rules.rules, {**values, "sm_pct": 75.0})
    assert (verdict.rule.name, verdict.unchecked) == ("compute_bound", [])
    # Waves alone cannot make a partial-wave tail when SM-active/elapsed was never measured.
    tail = {**FULL, "waves": 0.6, "sm_active_over_elapsed": None}
    verdict = evaluate(rules.rules, tail)
    assert verdict.rule.name != "partial_wave_tail" and "sm_active_over_elapsed" in (
        verdict.unchecked
    )
    # All inputs of a rule missing: the rule cannot match.
    gone = {k: None for k in FULL}
    verdict = evaluate(rules.rules, gone)
    assert verdict.rule.name == "unresolved_no_dominant_limiter"
    assert set(verdict.unchecked) == set(FULL)


@pytest.mark.parametrize(
    ("issue", "tensor", "expected", "unchecked"),
    [
        (61.0, 1.0, "compute_bound", []),  # sm_pct >= issue_pct >= 60: the rule holds
        (1.0, 61.0, "compute_bound", []),  # the tensor pipe's own comparison holds
        (59.0, 1.0, "dram_bandwidth_bound", ["sm_pct"]),  # 59 says nothing of sm_pct >= 60
        (None, 1.0, "dram_bandwidth_bound", ["sm_pct"]),
    ],
)
def test_sm_pct_unmeasured_is_bounded_below_by_its_sub_units(
    rules: LoadedRules,
    issue: float | None,
    tensor: float,
    expected: str,
    unchecked: list[str],
) -> None:
    """A light kernel has no sm_pct, but sm__throughput is the maximum of its sub-units,
    instruction issue and the tensor pipe among them: issue_pct >= 60 decides compute_bound
    (the H100 light capture's gelu and VAE div/mul read it DRAM-bound before: issue 61-68 %,
    sm_pct the same in the full capture); below 60 it decides nothing and the DRAM verdict
    says it passed over sm_pct."""
    values = {**FULL, "sm_pct": None, "issue_pct": issue, "tensor_pct": tensor, "dram_pct": 83.0}
    verdict = evaluate(rules.rules, values)
    assert (verdict.rule.name, verdict.unchecked) == (expected, unchecked)


def test_a_lower_bound_fails_a_less_than_and_decides_nothing_below() -> None:
    """`sm_pct < 40` fails when issue_pct is 45 (sm_pct >= 45), is unknown at issue_pct 35;
    `tensor_pct >= 60` fails at sm_pct 50 (the upper bound); `==` is never decided by a bound."""
    from ncu_classify.verdicts.rules import Compare, bound_deciding

    below = Compare(metric="sm_pct", op="<", value=40.0)
    assert bound_deciding(below, {"issue_pct": 45.0}) == (False, "issue_pct", 45.0)
    assert bound_deciding(below, {"issue_pct": 35.0}) is None
    assert bound_deciding(below, {"issue_pct": 45.0, "tensor_pct": 80.0}) == (
        False, "tensor_pct", 80.0
    )  # fmt: skip  # the bound farthest from the threshold
    above = Compare(metric="tensor_pct", op=">=", value=60.0)
    assert bound_deciding(above, {"sm_pct": 50.0}) == (False, "sm_pct", 50.0)
    assert bound_deciding(above, {"sm_pct": 70.0}) is None
    assert bound_deciding(Compare(metric="sm_pct", op="==", value=1.0), {"issue_pct": 1.0}) is None
    compute = Compare(metric="sm_pct", op=">=", value=60.0)  # the FMA pipe is a sub-unit too
    assert bound_deciding(compute, {"fma_pipe_pct": 65.0}) == (True, "fma_pipe_pct", 65.0)
    assert bound_deciding(compute, {"l1_pipe_pct": 95.0}) is None  # not one: it can be above
    assert bound_deciding(below, {"issue_pct": float("nan")}) is None


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return path


ALWAYS = "  - {name: z, text: t, when: always, alternative_explanation: a, counter_experiment: b}\n"


def test_unknown_metric_names_the_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "id: x\nrules:\n  - name: a\n    text: t\n    when:\n      any:\n"
        "        - {metric: sm_pct, op: '>=', value: 60}\n"
        "        - {metric: smpct, op: '>=', value: 60}\n"
        "    alternative_explanation: a\n    counter_experiment: b\n" + ALWAYS,
    )
    with pytest.raises(RulesError) as info:
        load_rules(path)
    assert str(info.value).startswith(
        f"{path}:8:12: rules.0.when.any.1.metric: Value error, unknown metric 'smpct'"
    )


@pytest.mark.parametrize(
    ("when", "always", "expected"),
    [
        ("{metric: sm_pct, op: '>', value: 1}", False, r"last rule must have `when: always`"),
        ("{metric: sm_pct, op: '=>', value: 1}", True, r"rules.yaml:3:\d+: rules.0.when.op"),
        ("\"__import__('os')\"", True, r"rules.yaml:3:\d+: rules.0.when"),  # never eval'd
    ],
)
def test_bad_rules_are_refused(tmp_path: Path, when: str, always: bool, expected: str) -> None:
    text = (
        f"id: x\nrules:\n  - {{name: a, text: t, when: {when},"
        " alternative_explanation: a, counter_experiment: b}\n"
    )
    path = _write(tmp_path, text + (ALWAYS if always else ""))
    with pytest.raises(RulesError, match=expected):
        load_rules(path)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "id: x\nrules: [\n")
    with pytest.raises(RulesError, match=r"rules.yaml:\d+:\d+: invalid YAML"):
        load_rules(path)


def test_reproduces_every_legacy_kernel_verdict(rules: LoadedRules, legacy_path: Path) -> None:
    """Every legacy verdict made on evidence is reproduced (88), also with three-valued rules:
    FA3's prepare_varlen_num_blocks_kernel is latency-limited with tensor_pct never measured,
    because its sm_pct of 0.0055 % bounds the tensor pipe (sm__throughput is the maximum of its
    sub-units); its latency `any` holds on warps alone, whatever the missing waves."""
    original = json.loads(legacy_path.read_text())
    redone = reclassify(load_card_file(legacy_path), rules)
    same, changed = 0, []
    for old_card, new_card in zip(original["cards"], redone.cards, strict=True):
        assert old_card["group"] == new_card.group
        for old, new in zip(old_card["kernels"], new_card.kernels, strict=True):
            assert old["kernel"] == new.kernel
            if "classification" in old and old.get("evidence"):
                if new.classification == old["classification"]:
                    same += 1
                else:
                    changed.append((new.function_name or new.kernel[:40], old["classification"],
                                    new.classification, new.unchecked_metrics))  # fmt: skip
    assert (same, changed) == (88, [])


def test_a_stricter_rules_file_changes_verdicts(legacy_path: Path, tmp_path: Path) -> None:
    text = (ROOT / "rules" / "default.yaml").read_text().replace("value: 60}", "value: 90}")
    strict = load_rules(_write(tmp_path, text.replace("id: legacy-v1", "id: strict")))
    cards = reclassify(load_card_file(legacy_path), strict)
    assert cards.rules_id == "strict"
    assert cards.summary.get("compute_bound", 0) < 13
