"""reclassify on the one card model: idempotent, valid against the published schema, and the
legacy adapter keeps every legacy field while repairing or flagging its known defects."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from helpers import ROOT

from ncu_classify.cards.files import card_file_text, load_card_file, write_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.core.errors import CardsError
from ncu_classify.present.schema import SCHEMA_FILE
from ncu_classify.verdicts.judge import reclassify
from ncu_classify.verdicts.rules import LoadedRules

AT = "2026-12-01T00:00:00+00:00"
WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832_40heads" / "cards.json"
FAILED_GROUP = "attention:flash_attn:self_b1_h40_d128_q4680_k4680of29640:bf16"
FAILED_ERROR = (
    "unsupported: backend flash_attn is not importable here: No module named 'flash_attn'"
)


def validate(text: str) -> CardFile:
    """Check cards text against the published JSON Schema and against the models it is
    generated from, in strict mode."""
    jsonschema.validate(json.loads(text), json.loads(SCHEMA_FILE.read_text()))
    return CardFile.model_validate_json(text, strict=True)


def _unstamped_lines(text: str) -> list[str]:
    """Lines of a cards file but the reclassified_at stamp."""
    return [line for line in text.splitlines() if '"reclassified_at"' not in line]


def test_own_workload_cards_reclassify_to_the_same_bytes(rules: LoadedRules) -> None:
    original = WORKLOAD.read_text()
    redone = card_file_text(reclassify(load_card_file(WORKLOAD), rules, at=AT))
    assert f'  "reclassified_at": "{AT}",' in redone.splitlines()
    assert _unstamped_lines(redone) == _unstamped_lines(original)
    assert validate(redone).reclassified_at == AT


def test_a_failed_card_stays_failed_with_its_error(
    smoke_cards: CardFile, rules: LoadedRules, tmp_path: Path
) -> None:
    path = tmp_path / "cards.json"
    write_card_file(path, smoke_cards)
    before = smoke_cards.model_dump_json()
    redone = reclassify(load_card_file(path), rules, at=AT)
    assert smoke_cards.model_dump_json() == before  # pure: the input is not touched
    failed = [
        (c.group, c.error, c.primary, c.kernels) for c in redone.cards if c.status == "failed"
    ]
    assert failed == [(FAILED_GROUP, FAILED_ERROR, None, [])]
    assert redone.by_stage["attention"]["failed"] == 1
    assert _unstamped_lines(card_file_text(redone)) == _unstamped_lines(path.read_text())
    # Also straight from classify's model, without a file in between.
    assert _unstamped_lines(card_file_text(reclassify(smoke_cards, rules))) == _unstamped_lines(
        path.read_text()
    )


@pytest.mark.parametrize(
    "source", [WORKLOAD, ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json"]
)
def test_reclassify_twice_is_reclassify_once(
    rules: LoadedRules, tmp_path: Path, source: Path
) -> None:
    once = reclassify(load_card_file(source), rules, at=AT)
    path = tmp_path / "once.json"
    write_card_file(path, once)
    twice = reclassify(load_card_file(path), rules, at=AT)
    assert card_file_text(twice) == path.read_text()
    assert card_file_text(reclassify(once, rules, at=AT)) == path.read_text()


def test_reclassified_cards_validate_against_the_published_schema(
    rules: LoadedRules, legacy_path: Path, smoke_cards: CardFile
) -> None:
    for cards in (load_card_file(legacy_path), load_card_file(WORKLOAD), smoke_cards):
        redone = validate(card_file_text(reclassify(cards, rules)))
        assert redone.schema_version == "1.10" and redone.rules_id == "legacy-v1"
    assert validate(
        card_file_text(reclassify(load_card_file(legacy_path), rules))
    ).source_format == ("legacy")


def test_legacy_adapter_keeps_every_legacy_field(legacy_path: Path) -> None:
    old = json.loads(legacy_path.read_text())
    new = json.loads(card_file_text(load_card_file(legacy_path)))
    for key in ("generated_at", "rules", "summary", "by_stage", "scope"):
        assert new[key] == old[key], key
    assert (new["source_format"], new["rules_id"], new["inputs"]) == (
        "legacy",
        None,
        [legacy_path.name],
    )
    changed = {"kernels", "shape_parameters", "summed_kernel_us"}
    verdict = {"primary", "primary_rule", "alternative_explanation", "counter_experiment", "status"}
    for old_card, new_card in zip(old["cards"], new["cards"], strict=True):
        assert set(old_card) <= set(new_card)
        skip = changed | (verdict if new_card["status"] == "incomplete" else set())
        assert {k: new_card[k] for k in old_card if k not in skip} == {
            k: v for k, v in old_card.items() if k not in skip
        }
        for old_kernel, new_kernel in zip(old_card["kernels"], new_card["kernels"], strict=True):
            assert set(old_kernel) <= set(new_kernel)
            assert new_kernel["kernel"] == old_kernel["kernel"]
            assert new_kernel["evidence"] == old_kernel["evidence"]
            for key, value in old_kernel.get("metrics", {}).items():
                if not (key == "dur_us" and new_kernel.get("metric_repairs")):
                    assert new_kernel["metrics"][key] == value
    # shape_parameters stored as JSON text by the legacy attention cards become objects.
    assert new["cards"][31]["shape_parameters"] == {
        "role": "self",
        "valid_keys": 4680,
        "allocated_keys": 29640,
    }


def test_legacy_durations_in_ms_are_repaired(rules: LoadedRules, legacy_path: Path) -> None:
    cards = reclassify(load_card_file(legacy_path), rules, at=AT)
    repaired = [(i, k) for i, c in enumerate(cards.cards) for k in c.kernels if k.metric_repairs]
    assert [k.metrics["dur_us"] for _, k in repaired] == [140.096, 3.648, 1340.0, 80.96, 107.456]
    assert {i for i, _ in repaired} == {22}
    assert repaired[0][1].metric_repairs == [
        "dur_us 0.140096 was in ms (cycles_elapsed 273173 / dur implies 1949899 MHz); now 140.096"
    ]
    assert cards.cards[22].summed_kernel_us == 1672.16


def test_legacy_truncated_kernel_lists_are_incomplete(
    rules: LoadedRules, legacy_path: Path
) -> None:
    cards = reclassify(load_card_file(legacy_path), rules, at=AT)
    incomplete = [(i, c) for i, c in enumerate(cards.cards) if c.status == "incomplete"]
    assert [i for i, _ in incomplete] == [12, 13, 25]
    for _, card in incomplete:
        assert (card.primary, card.primary_rule, card.counter_experiment) == (None, None, None)
        assert card.dominant_kernel and card.dominant_kernel.startswith("sm90_xmma_fprop_implicit")
        assert card.dominant_kernel not in {k.kernel for k in card.kernels}
        assert "the kernel list is truncated, so no primary class is given" in card.notes[0]
    assert incomplete[0][1].notes[0].endswith("(legacy primary: partial_wave_tail)")
    # The legacy total covers the unlisted conv kernel; the listed ones sum to 32.192 us only.
    assert [c.summed_kernel_us for _, c in incomplete] == [158.56, 287.104, 168.224]
    assert incomplete[0][1].notes[1] == (
        "summed_kernel_us 158.56 is the legacy total; 4 of the 4 listed kernels have a duration,"
        " summing to 32.192"
    )


def test_legacy_missing_values_stay_missing(rules: LoadedRules, legacy_path: Path) -> None:
    old = json.loads(legacy_path.read_text())
    cards = reclassify(load_card_file(legacy_path), rules, at=AT)
    nulls = 0
    for old_card, card in zip(old["cards"], cards.cards, strict=True):
        for old_kernel, kernel in zip(old_card["kernels"], card.kernels, strict=True):
            for key in ("tensor_pct", "waves"):
                if key in old_kernel.get("metrics", {}) and old_kernel["metrics"][key] is None:
                    nulls += 1
                    assert kernel.metrics[key] is None and kernel.evidence.get(key) is None
                    assert key in kernel.missing_metrics and key in card.missing_metrics
    assert nulls == 8
    fa3 = cards.cards[32].kernels[1]  # FA3 main kernel: compute bound on sm_pct 72.8, which
    # settles `sm >= 60 or tensor >= 60` whatever the missing tensor figure is
    assert (fa3.classification, fa3.unchecked_metrics) == ("compute_bound", [])


def test_load_errors_are_one_line_with_the_field_path(tmp_path: Path, legacy_path: Path) -> None:
    ours = json.loads(WORKLOAD.read_text())
    ours["cards"][2]["kernels"][0]["metrics"]["dur_us"] = "abc"
    newer = {**json.loads(WORKLOAD.read_text()), "schema_version": "2.0"}
    expected = [
        (ours, "cards.2.kernels.0.metrics.dur_us: Input should be a valid number"),
        (newer, "schema_version '2.0' is not one this tool reads (1.x)"),
        ({"cards": [3]}, "legacy cards file with no card that can be read (cards[0]: no group"),
    ]
    for doc, message in expected:
        path = tmp_path / "cards.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(CardsError) as info:
            load_card_file(path)
        at = r"(:\d+:\d+)?" if "cards.2" in message else ""  # a field's value has a place
        assert re.match(re.escape(f"{path}") + at + re.escape(f": {message}"), str(info.value))
        assert "\n" not in str(info.value)
