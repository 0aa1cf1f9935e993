"""`capture --drill-down CARDS`: only the shapes a cards file left unsettled are captured again,
with the warp-state counters, and the manifest says what was asked; refused requests say why in
one line. Against the stand-in ncu (tests/fakebin), which checks the command line and leaves
the real H200 report of exactly the shapes that ran."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.capture.run import capture
from ncu_classify.cards.files import card_file_text, load_card_file
from ncu_classify.cards.selection import drill_selection
from ncu_classify.cli.entry import run
from ncu_classify.core.stalls import CPI_METRIC, drill_metric_names, stall_metric
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

FAKEBIN = ROOT / "tests" / "fakebin"
FAULTS = ROOT / "fixtures" / "fault_h200"
SHAPES = FAULTS / "dit3.yaml"
K144 = "dit:linear:M4680_N5120_K144:bf16:bias"


@pytest.fixture
def first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Cards of a stand-in capture of the three DiT shapes under rules/roofline.yaml."""
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(FAULTS))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG"):
        monkeypatch.delenv(name, raising=False)
    capture(SHAPES, tmp_path / "raw")
    cards = tmp_path / "cards.json"
    rules = load_rules(ROOT / "rules" / "roofline.yaml")
    cards.write_text(card_file_text(classify([tmp_path / "raw"], rules, jobs=1)))
    return cards


def test_the_drill_down_captures_only_the_unsettled_shapes(first: Path, tmp_path: Path) -> None:
    chosen = drill_selection(load_card_file(first))
    assert chosen == {K144: "unresolved"}  # the K=144 GEMM: unresolved under roofline.yaml
    out = tmp_path / "drill"
    argv = ["capture", "--shapes", str(SHAPES), "-o", str(out), "--drill-down", str(first)]
    assert run(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["group"] for s in manifest["shapes"]] == [K144]
    assert manifest["drill_down"]["selected"] == chosen
    assert manifest["drill_down"]["cards_file"] == f"{first.parent.name}/cards.json"  # any cwd
    assert len(manifest["drill_down"]["cards_sha256"]) == 64
    assert manifest["metrics"][-len(drill_metric_names()) :] == drill_metric_names()
    [batch] = manifest["batches"]
    metrics = batch["argv"][batch["argv"].index("--metrics") + 1].split(",")
    assert CPI_METRIC in metrics and stall_metric("long_scoreboard") in metrics
    assert len(metrics) == len(set(metrics))


def test_a_named_class_is_drilled_too(first: Path, tmp_path: Path) -> None:
    cards = load_card_file(first)
    classes = {c.group: c.primary for c in cards.cards}
    named = next(p for g, p in classes.items() if g != K144 and p)
    chosen = drill_selection(cards, [named])
    assert chosen[K144] == "unresolved"
    assert {g for g, why in chosen.items() if why == f"class {named}"} == {
        g for g, p in classes.items() if p == named and g != K144
    }


def test_dry_run_prints_the_selected_shapes_only(
    first: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["capture", "--shapes", str(SHAPES), "-o", str(tmp_path / "d"), "--dry-run"]
    assert run([*argv, "--drill-down", str(first)]) == 0
    printed = capsys.readouterr().out
    assert K144 in printed and "M4680_N5120_K5120" not in printed
    assert stall_metric("barrier") in printed and not (tmp_path / "d" / "manifest.json").exists()
    last = printed.splitlines()[-1]  # the cards file named as the manifest names it
    assert last == f"# drill-down of {first.parent.name}/cards.json: 1 shape (1 unresolved)"


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["--drill-class", "x"], 2, "--drill-class needs --drill-down CARDS"),
        (["--drill-down", "{missing}"], 3, "missing.json"),
        (["--drill-down", "{notjson}"], 3, "notjson.json"),
    ],
)
def test_refused_requests_say_why_in_one_line(
    first: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    code: int,
    message: str,
) -> None:
    (tmp_path / "notjson.json").write_bytes(b"\xff\xfe not json")
    paths = {
        "{missing}": str(tmp_path / "missing.json"),
        "{notjson}": str(tmp_path / "notjson.json"),
    }
    extra = [paths.get(a, a) for a in extra]
    out = tmp_path / "d"
    assert run(["capture", "--shapes", str(SHAPES), "-o", str(out), *extra]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not out.exists() or not any(out.iterdir())


def test_nothing_to_drill_and_foreign_shapes_are_refused(
    first: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cards = load_card_file(first)
    settled = cards.model_copy(update={"cards": [c for c in cards.cards if c.group != K144]})
    quiet = tmp_path / "quiet.json"
    quiet.write_text(card_file_text(settled))
    argv = ["capture", "--shapes", str(SHAPES), "-o", str(tmp_path / "d")]
    assert run([*argv, "--drill-down", str(quiet)]) == 2
    assert "no card to drill down" in capsys.readouterr().err
    other = tmp_path / "other.yaml"  # a shapes file without the K=144 GEMM
    other.write_text(SHAPES.read_text().replace("K: 144", "K: 160"))
    argv = ["capture", "--shapes", str(other), "-o", str(tmp_path / "e")]
    assert run([*argv, "--drill-down", str(first)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"first: {K144}" in err[0] and "shapes file" in err[0]


def test_resume_must_keep_the_drill_down_selection(
    first: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "raw"  # the first capture, made without a drill-down
    argv = ["capture", "--shapes", str(SHAPES), "-o", str(out), "--resume"]
    assert run([*argv, "--drill-down", str(first)]) == 2
    assert "--drill-down selection" in capsys.readouterr().err


def test_a_drill_down_resumes_from_any_folder(
    first: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cards file spelt another way from another folder, or recorded by its path as given
    (captures before issue 37), is the same request: --resume continues (before: exit 2)."""
    out = tmp_path / "drill"
    argv = ["capture", "--shapes", str(SHAPES), "-o", str(out), "--drill-down"]
    assert run([*argv, str(first)]) == 0
    monkeypatch.chdir(first.parent)
    assert run([*argv, "cards.json", "--resume"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["drill_down"]["cards_file"] = "/somewhere/else/cards.json"
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert run([*argv, "cards.json", "--resume"]) == 0


@pytest.mark.parametrize("resolution", ["480x832", "704x1280"])
def test_the_committed_drill_downs_chose_what_the_selection_chooses(resolution: str) -> None:
    """The H200 drill-downs were asked for by these cards files: same shapes, same reasons."""
    cards = ROOT / "reports" / "drill" / f"cards_{resolution}_roofline.json"
    manifest = json.loads(
        (ROOT / "fixtures" / f"drill_h200_{resolution}" / "manifest.json").read_text()
    )
    assert manifest["drill_down"]["selected"] == drill_selection(load_card_file(cards))
    assert manifest["drill_down"]["cards_file"] == f"reports/drill/cards_{resolution}_roofline.json"
    assert manifest["drill_down"]["cards_sha256"] == hashlib.sha256(cards.read_bytes()).hexdigest()
    reasons = sorted(manifest["drill_down"]["selected"].values())
    assert reasons.count("unresolved") == {"480x832": 7, "704x1280": 8}[resolution]
