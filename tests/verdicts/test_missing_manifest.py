"""Capture folders without their manifest.json, or with a bad one (issue 37 item 8): said once
per folder with what is lost; a drill-down merges fully whichever side lost its manifest; a
manifest that cannot be read is exit 3 at its line; a report it does not name is said."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE, copied_capture

from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules, load_rules

FIX = ROOT / "fixtures"
FIRST, DRILL = FIX / "workload_h200_480x832", FIX / "drill_h200_480x832"
LOST = (
    "read as loose reports; lost with it: calls per inference (each card counts once), each"
    " shape's backend, inputs and note, its failed and missing shapes and their order, the"
    " machine it ran on, the recorded program's real time (coverage), the spread of --repeat"
    " launches"
)


def _without_manifest(folder: Path, to: Path) -> Path:
    """A copy of the capture `folder`'s reports (and logs) alone, as a user copies them."""
    to.mkdir(parents=True)
    for path in folder.iterdir():
        if path.name != "manifest.json":
            shutil.copy(path, to)
    return to


def test_a_capture_without_its_manifest_is_said_once(tmp_path: Path, rules: LoadedRules) -> None:
    """Two copies, one nested, each said once; the cards keep every captured shape's group
    and stage (the failed flash_attn shape is gone with the manifest)."""
    bare = _without_manifest(SMOKE, tmp_path / "runs" / "bare")
    _without_manifest(SMOKE, tmp_path / "runs" / "bare" / "again")
    cards = classify([tmp_path / "runs", bare], rules, jobs=1)
    shapes = "4 reports of a capture (10 shapes by the group ids of their NVTX ranges)"
    assert [w for w in cards.input_warnings if "manifest.json" in w] == [
        f"bare: {shapes} without its manifest.json: {LOST}",  # named as from any folder
        f"bare/again: {shapes} without its manifest.json: {LOST}",
    ]
    manifest = json.loads((SMOKE / "manifest.json").read_text())
    captured = [s["group"] for s in manifest["shapes"] if s["status"] == "ok"]
    assert sorted(c.group for c in cards.cards) == sorted(captured * 2)
    assert {c.stage for c in cards.cards} == {"dit", "vae", "attention", "output"}


def test_loose_reports_given_by_name_are_not_a_capture_folder(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """Reports given one by one are loose on purpose (the documented way to read one)."""
    bare = _without_manifest(SMOKE, tmp_path / "bare")
    cards = classify(sorted(bare.glob("*.ncu-rep.xz")), rules, jobs=1)
    assert cards.input_warnings == [] and len(cards.cards) == 10


def _merged(cards: CardFile) -> dict[str, tuple[str | None, list[object]]]:
    """Per group, its settled class and its kernels' drill-down stall shares."""
    return {
        c.group: (
            c.settled.primary if c.settled else None,
            [
                [s.share_pct for s in k.drill_down.stalls] if k.drill_down else None
                for k in c.kernels
            ],
        )
        for c in cards.cards
    }


@pytest.fixture(scope="module")
def reference() -> CardFile:
    """The drill-down merged with both manifests."""
    return classify([FIRST, DRILL], load_rules(), jobs=2)


@pytest.mark.parametrize("bare", ["first", "drill", "both"])
def test_a_drill_down_merges_fully_whichever_side_lost_its_manifest(
    bare: str, tmp_path: Path, reference: CardFile
) -> None:
    """Without the first capture's manifest its attention cards had no backend and 2 of 11
    drilled shapes were not merged; without the drill-down's, its 12 cards were cards of their
    own beside the first capture's (46 cards, 12 groups twice)."""
    first = _without_manifest(FIRST, tmp_path / "first") if bare != "drill" else FIRST
    drill = _without_manifest(DRILL, tmp_path / "drill") if bare != "first" else DRILL
    cards = classify([first, drill], load_rules(), jobs=2)
    assert len(cards.cards) == 34 and _merged(cards) == _merged(reference)
    assert sum(1 for c in cards.cards if c.settled) == 11
    said = [w for w in cards.input_warnings if "manifest.json" in w]
    assert not [w for w in cards.input_warnings if "not merged" in w or "appears in" in w]
    if bare != "drill":
        assert said[0] == (
            "first: 2 reports of a capture (34 shapes by the group ids of their NVTX ranges)"
            f" without its manifest.json: {LOST}; the drill-down merges into its cards by kernel"
            " names alone (backends unknown)"
        )
    if bare != "first":
        assert said[-1] == (
            "drill: 1 report of a capture (12 shapes by the group ids of their NVTX ranges)"
            f" without its manifest.json: {LOST}; read as a drill-down (every kernel holds its"
            " counters), merged by kernel names alone"
        )
        settled = next(c.settled for c in cards.cards if c.settled)
        assert settled.settled_by == "drill-down capture drill (without its manifest.json)"
    assert len(said) == {"first": 1, "drill": 1, "both": 2}[bare]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "seed": 1,\n  "tool_version": [1]\n}\n', "manifest.json:3:19: manifest field"),
        ('{"shapes": [}', "manifest.json:1:13: invalid JSON"),
        (None, "manifest.json: cannot read: Is a directory"),
    ],
)
def test_a_bad_manifest_is_exit_3_at_its_line(
    text: str | None, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A field of the wrong type names file:line:col (once the file alone); a folder named
    manifest.json was no manifest at all: the capture was read as loose reports (exit 0)."""
    capture = _without_manifest(SMOKE, tmp_path / "raw")
    if text is None:
        (capture / "manifest.json").mkdir()
    else:
        (capture / "manifest.json").write_text(text)
    out = tmp_path / "cards.json"
    assert run(["classify", str(capture), "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"ncu-classify: error: {capture}/{where}") and err.count("\n") == 1
    assert not out.exists()


def test_a_report_the_manifest_does_not_name_is_said(tmp_path: Path, rules: LoadedRules) -> None:
    capture = copied_capture(tmp_path, lambda m: None)
    shutil.copy(SMOKE / "dit.ncu-rep.xz", capture / "extra.ncu-rep.xz")
    cards = classify([capture], rules, jobs=1)
    assert cards.input_warnings == [
        f"{capture.name}/extra.ncu-rep.xz: in the capture folder but not named by its"
        " manifest.json: read as a loose report, its cards beside the capture's",
        "group 'dit:linear:M4680_N5120_K5120:bf16:bias' appears in 2 cards",
        "group 'dit:linear:M4680_N5120_K144:bf16:bias' appears in 2 cards",
        "group 'dit:linear:M3_N30720_K5120:bf16:bias' appears in 2 cards",
    ]


def test_reports_in_a_folder_under_a_capture_are_said_unread(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """A capture folder is one source, read by its manifest: reports in folders below it were
    read by no one, without a word (hidden ones, such as a capture's .work, stay unsaid)."""
    capture = copied_capture(tmp_path, lambda m: None)
    (capture / "old" / "x").mkdir(parents=True)
    (capture / ".work").mkdir()
    for folder in (capture / "old", capture / "old" / "x", capture / ".work"):
        shutil.copy(SMOKE / "dit.ncu-rep.xz", folder)
    cards = classify([tmp_path], rules, jobs=1)
    assert cards.input_warnings == [
        f"{tmp_path.name}/{capture.name}/old: 2 reports inside the capture folder"
        f" {tmp_path.name}/{capture.name}, which is read by its"
        " manifest.json: not read (give this folder itself to read them)"
    ]
    assert len(cards.cards) == 11


def test_coverage_lost_with_the_manifest_says_so(tmp_path: Path, rules: LoadedRules) -> None:
    """A recorded capture read without its manifest: its coverage line (summary, report, next)
    names the missing manifest, not 'not made from a recorded program', which is untrue."""
    from ncu_classify.present.coverage import coverage_lines, file_coverage
    from ncu_classify.present.next_moves import next_moves

    recorded = FIX / "record_h200_wan14b"
    whole = classify([recorded], rules, jobs=1)
    assert [line.split(":")[0] for line in coverage_lines(whole)] == [
        "coverage dit",
        "coverage output",
        "coverage vae",
    ]
    bare = classify([_without_manifest(recorded, tmp_path / "bare")], rules, jobs=1)
    said = (
        "a capture folder was read without its manifest.json, which carries the recorded"
        " program's times (see the warning)"
    )
    assert coverage_lines(bare) == [f"coverage: unknown: {said}"]
    assert file_coverage(bare).unknown == f"coverage unknown: {said}"
    assert next_moves(bare, "c.json").coverage_unknown == said
    assert next_moves(whole, "c.json").coverage_unknown is None


def test_a_folder_without_its_manifest_counts_reports_read_and_distinct_shapes(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """Two copies of one report and a truncated one: 2 reports read holding 3 shapes, not 3
    reports and 6 shapes; one report reads in the singular (issue 37)."""
    hx = tmp_path / "hx"
    hx.mkdir()
    shutil.copy(SMOKE / "dit.ncu-rep.xz", hx / "dit.ncu-rep.xz")
    shutil.copy(SMOKE / "dit.ncu-rep.xz", hx / "dit2.ncu-rep.xz")
    plain = lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())
    (hx / "cut.ncu-rep").write_bytes(plain[:400_000])
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(SMOKE / "output.ncu-rep.xz", one)
    cards = classify([hx, one], rules, jobs=1)
    assert [w.split(" without its")[0] for w in cards.input_warnings if "manifest.json" in w] == [
        "hx: 2 reports of a capture (3 shapes by the group ids of their NVTX ranges)",
        "one: 1 report of a capture (1 shape by the group ids of their NVTX ranges)",
    ]
