"""Legacy cards files read as they come: the users' real file and the variants their own files
hold (a note as a list in 28 of 34 cards of the 704x1280 half, an unknown field, numbers as
text...), every field of a real card set to every odd kind of value, impossible measurements
flagged and kept out of verdicts and totals, duplicate shapes counted alike by summary and
diff. Every variant is built from the real 480x832 file at test time."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import LEGACY, ROOT

from ncu_classify.cards.files import card_file_text, load_card_file
from ncu_classify.cards.legacy import from_legacy
from ncu_classify.cards.rollup import by_stage
from ncu_classify.cli.entry import run
from ncu_classify.core.errors import CardsError
from ncu_classify.verdicts.judge import reclassify
from ncu_classify.verdicts.rules import load_rules

REAL = json.loads(LEGACY.read_text())
ODD_VALUES: list[Any] = [None, [], ["x"], {}, {"a": 1}, 3, 2.5, -1, 10**30, True, "text", ""]


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "legacy.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _variant(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = copy.deepcopy(REAL)
    edit(doc)
    return doc


def _verdicts(path: Path) -> list[tuple[str, str | None, str]]:
    cards = reclassify(load_card_file(path), load_rules(None))
    return [(c.group, c.primary, c.status) for c in cards.cards]


def _every_card(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        for card in doc["cards"]:
            card.update(copy.deepcopy(fields))

    return edit


def test_a_note_stored_as_a_list_reproduces_every_verdict(tmp_path: Path) -> None:
    """The 704x1280 half of the users' file: scheduler_note is `[]` in 28 of 34 cards."""
    lists = _write(tmp_path, _variant(_every_card(scheduler_note=[])))
    assert _verdicts(lists) == _verdicts(LEGACY)
    cards = load_card_file(lists)
    assert {c.scheduler_note for c in cards.cards} == {None}  # an empty list is no note
    assert [w for w in cards.input_warnings if "repeats" not in w] == [
        f"{lists.name}: cards[*].scheduler_note: a list, read as null (35 places, first"
        " cards[0].scheduler_note)"
    ]
    joined = _write(tmp_path, _variant(_every_card(scheduler_note=["a", "b"])), "joined.json")
    assert {c.scheduler_note for c in load_card_file(joined).cards} == {"a; b"}


VARIANTS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown top field", lambda d: d.update(pipeline="v7"), "pipeline: a field the card"),
    ("unknown card field", lambda d: d["cards"][0].update(owner="me"), "cards[0].owner: a fi"),
    ("unknown kernel field", lambda d: d["cards"][0]["kernels"][0].update(x=1), ".x: a field"),
    ("flops as float", lambda d: d["cards"][0].update(nominal_mac_flops=2.5e11), "read as"),
    ("flops of 30 digits", lambda d: d["cards"][0].update(nominal_mac_flops=10**30), ""),
    ("no generated_at", lambda d: d.pop("generated_at"), ""),
    ("numeric generated_at", lambda d: d.update(generated_at=1764547200), "generated_at: a"),
    ("metrics null", lambda d: d["cards"][0]["kernels"][0].update(metrics=None), ""),
    ("evidence null", lambda d: d["cards"][0]["kernels"][0].update(evidence=None), ""),
    ("resolution int", lambda d: d["cards"][0].update(resolution=480), "(480), read as text"),
    ("notes string", lambda d: d["cards"][0].update(notes="checked"), "notes: text, read as"),
    ("scope null", lambda d: d.update(scope=None), ""),
    ("summary list", lambda d: d.update(summary=[1, 2]), "summary: a list, not usable"),
    ("rules dict", lambda d: d.update(rules={"1": "sm_pct >= 60"}), "rules: an object, read"),
    ("shape null", lambda d: d["cards"][0].update(shape_parameters=None), "shape_parameters"),
    ("ncu_output list", lambda d: d["cards"][0].update(ncu_output=["a.ncu-rep"]), "ncu_output"),
    ("status odd", lambda d: d["cards"][3].update(status=True), "cards[3].status: a boolean"),
    ("kernel not object", lambda d: d["cards"][0]["kernels"].append(7), "not a kernel object"),
    ("card not object", lambda d: d["cards"].append("x"), "cards[35]: no group id"),
    ("deep shape text", lambda d: d["cards"][0].update(shape_parameters="[" * 5000), ""),
]


@pytest.mark.parametrize(("name", "edit", "warning"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_each_odd_field_of_the_issue_is_read_by_every_command(
    name: str,
    edit: Callable[[dict[str, Any]], None],
    warning: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, _variant(edit))
    cards = load_card_file(path)
    assert len(cards.cards) == 35
    assert warning in "\n".join(cards.input_warnings), cards.input_warnings
    assert run(["reclassify", str(path), "-o", str(tmp_path / "re.json")]) == 0
    assert run(["summary", str(path)]) == 0
    assert run(["diff", str(LEGACY), str(path), "-o", str(tmp_path / "d.json")]) == 0
    assert run(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "error" not in err
    if warning:
        assert warning in err  # the warning reaches the user of every command


def test_unknown_and_odd_fields_survive_reclassify(tmp_path: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["pipeline"] = {"version": 7}
        doc["cards"][0]["owner"] = "me"
        doc["cards"][0]["ncu_output"] = ["a.ncu-rep", "b.ncu-rep"]
        doc["cards"][0]["kernels"][0]["metrics"]["sm_pct"] = 250
        doc["cards"][1]["status"] = {"odd": True}

    path = _write(tmp_path, _variant(edit))
    out = tmp_path / "re.json"
    assert run(["reclassify", str(path), "-o", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["legacy_fields"] == {"pipeline": {"version": 7}}
    card = written["cards"][0]
    assert card["legacy_fields"] == {"owner": "me"}
    assert card["ncu_output"] == "a.ncu-rep; b.ncu-rep"
    kernel = card["kernels"][0]
    assert kernel["legacy_fields"] == {"metrics": {"sm_pct": 250}}
    assert kernel["metrics"]["sm_pct"] is None
    assert written["cards"][1]["legacy_fields"] == {"status": {"odd": True}}
    assert load_card_file(out).cards[0].legacy_fields == {"owner": "me"}  # read back as ours


@pytest.mark.parametrize("level", ["top", "card", "kernel", "metrics", "evidence"])
@pytest.mark.parametrize("value", ODD_VALUES, ids=[json.dumps(v)[:12] for v in ODD_VALUES])
def test_every_field_of_a_real_card_may_hold_any_kind_of_value(
    level: str, value: Any, tmp_path: Path
) -> None:
    """Each field of the real file at each level set to each odd kind, one at a time: every
    card is still built (but one without a group id); then all of them at once, read from
    the file and written back."""
    for key in _keys(level):
        doc = copy.deepcopy(REAL)
        _target(doc, level)[key] = copy.deepcopy(value)
        cards = from_legacy(doc, "legacy.json")  # raises nothing
        lost = level == "card" and key == "group" and not isinstance(value, str)
        assert len(cards.cards) == (34 if lost else 35), (level, key, value)
    doc = copy.deepcopy(REAL)
    _target(doc, level).update({key: copy.deepcopy(value) for key in _keys(level)})
    cards = load_card_file(_write(tmp_path, doc))
    lost = level == "card" and not isinstance(value, str)
    assert len(cards.cards) == (34 if lost else 35)
    card_file_text(reclassify(cards, load_rules(None)))


def _keys(level: str) -> list[str]:
    return [k for k in _target(copy.deepcopy(REAL), level) if k not in ("cards", "kernels")]


def _target(doc: dict[str, Any], level: str) -> dict[str, Any]:
    card = doc["cards"][0]
    kernel = card["kernels"][0]
    return {"top": doc, "card": card, "kernel": kernel}.get(level) or kernel[level]


def test_impossible_measurements_are_flagged_and_decide_nothing(tmp_path: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        card = doc["cards"][4]  # one kernel, dram_bandwidth_bound, sm_pct 8.3
        card["kernels"][0]["metrics"]["sm_pct"] = 250
        card["kernels"][0]["evidence"]["sm_pct"] = 250
        doc["cards"][0]["kernels"][0]["metrics"]["dur_us"] = 0
        doc["cards"][1]["nominal_mac_flops"] = -5

    path = _write(tmp_path, _variant(edit))
    cards = reclassify(load_card_file(path), load_rules(None))
    base = reclassify(load_card_file(LEGACY), load_rules(None))
    hot = cards.cards[4]
    assert hot.primary == base.cards[4].primary == "dram_bandwidth_bound"  # 250 % decides nothing
    assert hot.kernels[0].metrics["sm_pct"] is None
    assert hot.kernels[0].metric_repairs == ["not measurements, read as missing: sm_pct 250"]
    assert cards.cards[1].nominal_mac_flops is None
    assert cards.cards[1].legacy_fields == {"nominal_mac_flops": -5}
    timed = cards.cards[0]
    assert timed.kernels[0].metrics["dur_us"] is None
    assert timed.summed_kernel_us == base.cards[0].summed_kernel_us  # the legacy total stands
    assert any("0 us is no kernel duration" in w for w in cards.input_warnings)
    assert any("250 % of a peak is impossible" in w for w in cards.input_warnings)
    assert any("nominal_mac_flops: negative (-5)" in w for w in cards.input_warnings)


def test_hit_rates_above_100_are_measurements(tmp_path: Path) -> None:
    """ncu reads L2 hit rates above 100 %: the real file has 101.29; it is kept."""
    kernel = load_card_file(LEGACY).cards[21].kernels[2]
    assert kernel.metrics["l2_hit_pct"] == 101.286436 and not kernel.metric_repairs


def test_no_card_that_can_be_built_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, {"generated_at": "x", "cards": [{"stage": "dit"}, 5]})
    with pytest.raises(CardsError) as info:
        load_card_file(path)
    assert str(info.value) == (
        f"{path}: legacy cards file with no card that can be read"
        " (cards[*]: no group id: the card is left out (2 places, first cards[0]))"
    )


def test_summary_and_diff_totals_agree_with_a_duplicate_shape(tmp_path: Path) -> None:
    """The real file lists the DiT linear M1170 N5120 K5120 twice (cards 7 and 20): both count,
    in summary and in diff alike, and the second is a `repeat` of the first in the diff."""
    cards = load_card_file(LEGACY)
    assert [
        i for i, c in enumerate(cards.cards) if "'M': 1170, 'N': 5120, 'K': 5120" in c.group
    ] == [
        7,
        20,
    ]
    totals = {(r.stage, r.primary): (r.cards, r.kernel_us) for r in by_stage(cards.cards)}
    ours = ROOT / "reports/diff/cards/w480_gpu0.json"
    target = tmp_path / "d.json"
    assert run(["diff", str(LEGACY), str(ours), "-o", str(target)]) == 0
    diff = json.loads(target.read_text())
    rolled = {
        (r["stage"], r["primary"]): (r["baseline_cards"], r["baseline_us"]) for r in diff["rollup"]
    }
    assert {k: v for k, v in rolled.items() if v[0]} == totals
    assert [s["change"] for s in diff["shapes"]].count("repeat") == 1
    assert any("cards[20] repeats cards[7]" in w for w in cards.input_warnings)


def test_a_field_that_refuses_our_own_file_names_its_line_and_column(tmp_path: Path) -> None:
    """Our format stays strict; the error points at the value, in an indented file too."""
    ours = ROOT / "fixtures/workload_h200_480x832/cards.json"
    doc = json.loads(ours.read_text())
    doc["cards"][1]["kernels"][0]["metrics"]["dur_us"] = "slow"
    path = tmp_path / "ours.json"
    text = json.dumps(doc, indent=2)
    path.write_text(text)
    with pytest.raises(CardsError) as info:
        load_card_file(path)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if '"dur_us": "slow"' in x)
    column = text.splitlines()[line - 1].index('"slow"') + 1
    assert str(info.value) == (
        f"{path}:{line}:{column}: cards.1.kernels.0.metrics.dur_us: Input should be a valid number"
    )
