"""Issue 37 item 3: outputs do not depend on where the command runs. The same inputs give the
same bytes from any working folder (paths named by what they are: `smoke_h200/dit.ncu-rep.xz`,
the rules file by its name, its text kept in the cards), and `diff` names the thresholds a flip
crossed from any folder, also for cards that name their rules by a path from elsewhere."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE

from ncu_classify.cli.entry import run

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

ROOFLINE = ROOT / "rules" / "roofline.yaml"
FIRST = "dit:linear:M4680_N5120_K5120:bf16:bias"  # tensor_pipe_bound, tensor_pct 94.46


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def _classify(cwd: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> None:
    monkeypatch.chdir(cwd)
    assert run(["classify", *argv, "--jobs", "1"]) == 0


def test_classify_gives_the_same_bytes_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative and absolute spellings of the inputs, the rules and -o, from two folders."""
    out, elsewhere = tmp_path / "out", tmp_path / "a" / "b"
    out.mkdir()
    elsewhere.mkdir(parents=True)
    _classify(
        ROOT,
        monkeypatch,
        "fixtures/smoke_h200",
        "fixtures/user_set_full/",
        "--rules",
        "rules/roofline.yaml",
        "-o",
        str(out / "one.json"),
    )
    _classify(
        elsewhere,
        monkeypatch,
        str(SMOKE),
        os.path.relpath(ROOT / "fixtures" / "user_set_full", elsewhere),
        "--rules",
        str(ROOFLINE),
        "-o",
        "../../out/two.json",
    )
    one, two = (out / "one.json").read_bytes(), (out / "two.json").read_bytes()
    assert one == two
    doc = json.loads(one)
    assert doc["inputs"] == ["smoke_h200", "user_set_full"]
    assert doc["rules_file"] == "roofline.yaml"
    assert doc["rules_yaml"] == ROOFLINE.read_text(encoding="utf-8")
    assert [c["folder"] for c in doc["captures"]] == ["smoke_h200"]
    card = next(c for c in doc["cards"] if c["group"] == FIRST)
    assert card["ncu_output"] == "smoke_h200/dit.ncu-rep.xz"
    assert card["kernels"][0]["report"] == "smoke_h200/dit.ncu-rep.xz"


def _flipped_pair(folder: Path, rules: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Cards of the smoke capture under `rules`, and the same with the first card's tensor pipe
    at 30 % (reclassified: no longer tensor_pipe_bound)."""
    base, edited, cand = folder / "base.json", folder / "edited.json", folder / "cand.json"
    given = os.path.relpath(rules, folder)
    _classify(folder, monkeypatch, str(SMOKE), "--rules", given, "-o", base.name)
    doc = json.loads(base.read_text())
    kernel = next(c for c in doc["cards"] if c["group"] == FIRST)["kernels"][0]
    kernel["metrics"]["tensor_pct"] = kernel["metrics"]["sm_pct"] = 30.0
    edited.write_text(json.dumps(doc))
    assert run(["reclassify", str(edited), "--rules", given, "-o", str(cand)]) == 0
    return base, cand


def _crossings(baseline: Path, candidate: Path, out: Path) -> tuple[list[dict], list[str]]:
    assert run(["diff", str(baseline), str(candidate), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    [flip] = [s for s in doc["shapes"] if s["change"] == "flipped"]
    return flip["crossings"], doc["warnings"]


def test_diff_names_the_thresholds_from_any_folder_without_the_rules_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cards keep the rules' text: the rules file gone, diff from another folder still
    names the threshold the flip crossed (before: `rules ... not found`, no crossing)."""
    work = tmp_path / "work"
    work.mkdir()
    rules = work / "my_rules.yaml"
    shutil.copy(ROOFLINE, rules)
    base, cand = _flipped_pair(work, rules, monkeypatch)
    rules.unlink()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    crossings, warnings = _crossings(base, cand, tmp_path / "diff.json")
    assert warnings == []
    assert crossings == [
        {
            "rule": "tensor_pipe_bound",
            "metric": "tensor_pct",
            "op": ">=",
            "threshold": 60.0,
            "baseline": 94.4593817951,
            "candidate": 30.0,
            "within_noise": False,
        }
    ]
    # the sides are named as from any folder too
    doc = json.loads((tmp_path / "diff.json").read_text())
    assert [doc["baseline"]["path"], doc["candidate"]["path"]] == ["base.json", "cand.json"]


def _as_before_1_7(path: Path, rules_file: str) -> None:
    """`path` as classify wrote it before 1.7: the rules named by a path, their text not kept."""
    doc = json.loads(path.read_text())
    doc.pop("rules_yaml", None)
    doc["rules_file"] = rules_file
    path.write_text(json.dumps(doc))


def test_diff_finds_the_rules_of_older_cards_beside_or_above_the_cards_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cards made in `project/` with `--rules rules/my.yaml`, kept in `project/out/`, compared
    from another folder: the rules are found from the cards file's folder up (before: only in
    the working folder)."""
    project = tmp_path / "project"
    (project / "rules").mkdir(parents=True)
    (project / "out").mkdir()
    rules = project / "rules" / "my.yaml"
    shutil.copy(ROOFLINE, rules)
    base, cand = _flipped_pair(project / "out", rules, monkeypatch)
    for side in (base, cand):
        _as_before_1_7(side, "rules/my.yaml")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    crossings, warnings = _crossings(base, cand, tmp_path / "diff.json")
    assert warnings == [] and [c["threshold"] for c in crossings] == [60.0]
    rules.unlink()  # gone: the warning says where it was looked for
    crossings, warnings = _crossings(base, cand, tmp_path / "diff.json")
    assert crossings == []
    assert warnings == [
        "rules roofline-v1 not found to name the thresholds a flip crossed (rules/my.yaml is"
        " neither beside the cards file, in a folder above it nor in the working folder);"
        " --reclassify RULES gives them"
    ]


def test_reclassified_legacy_cards_are_the_same_bytes_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy file's name, not its path as given, in `inputs` and in its warnings."""
    legacy = ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json"
    monkeypatch.chdir(ROOT)
    assert run(["reclassify", str(legacy.relative_to(ROOT)), "-o", str(tmp_path / "a.json")]) == 0
    monkeypatch.chdir(tmp_path)
    assert run(["reclassify", str(legacy), "-o", "b.json"]) == 0
    one, two = (tmp_path / "a.json").read_bytes(), (tmp_path / "b.json").read_bytes()
    assert one == two
    doc = json.loads(one)
    assert doc["inputs"] == ["legacy_cards_480x832.json"]
    assert doc["input_warnings"][0].startswith("legacy_cards_480x832.json: cards[20] repeats")


def test_rules_text_larger_than_a_rules_file_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cards file's `rules_yaml` is bounded as a rules file is (256 KiB; YAML reads at about
    100 KB/s): a hostile one costs the crossings, not minutes."""
    work = tmp_path / "work"
    work.mkdir()
    rules = work / "my_rules.yaml"
    shutil.copy(ROOFLINE, rules)
    base, cand = _flipped_pair(work, rules, monkeypatch)
    for side in (base, cand):
        doc = json.loads(side.read_text())
        doc["rules_yaml"] = "# padding\n" * 30_000 + doc["rules_yaml"]
        side.write_text(json.dumps(doc))
    crossings, warnings = _crossings(base, cand, tmp_path / "diff.json")
    assert crossings == []
    assert warnings == [
        "rules roofline-v1 not found to name the thresholds a flip crossed (the rules text the"
        " cards keep is not the recorded one, or cannot be read); --reclassify RULES gives them"
    ]
