"""A report of a capture folder given alone (`classify cap/main.ncu-rep.xz`) is read with the
folder's manifest, as a part of the capture: its shapes' cards are those the folder gives (stage,
calls, the recording's real time, an unfinished shape's error), and nothing is said missing of
what was not asked for. It was read as a loose report: cards of a stage named after the report,
an unfinished shape's first kernels a card of their own, no coverage. On the H200's compiled
Wan capture (reports `block` and `main`) and its 480x832 `--repeat 5` capture."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, copied_capture

from ncu_classify.cards.model import Card, CardFile
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

CAPTURE = ROOT / "fixtures" / "compiled_h200" / "cap"
UNFINISHED = "main:aten._to_copy.default:1x128x8x240x360:bf16"
MAIN = ["main:aten.randn.default", UNFINISHED]


def _part(report: str) -> str:
    """The warning of a report read as part of the capture in its folder."""
    return (
        f"{report}: read as part of the capture in its folder (its manifest.json), with only"
        " its own shapes: classify the folder for the whole capture"
    )


def _same(card: Card) -> dict:
    """A card without the names of its report, which differ as the inputs differ."""
    seen = card.model_dump(exclude={"ncu_output"})
    for kernel in seen["kernels"]:
        kernel.pop("report")
    return seen


@pytest.fixture(scope="module")
def folder(rules: LoadedRules) -> CardFile:
    return classify([CAPTURE], rules, jobs=1)


def test_a_report_given_alone_has_the_cards_of_its_shapes(
    rules: LoadedRules, folder: CardFile
) -> None:
    """`main` holds two of the capture's three shapes: their cards are the folder's (stage
    main, the recording's 203.6 and 437.4 us a call; they were `main:main:...` cards without
    real time), the capture's header is kept and coverage is that of stage main alone."""
    alone = classify([CAPTURE / "main.ncu-rep.xz"], rules, jobs=1)
    assert [c.group for c in alone.cards] == MAIN
    assert [_same(c) for c in alone.cards] == [_same(c) for c in folder.cards[1:]]
    assert [(c.stage, c.real_us) for c in alone.cards] == [("main", 203.647), ("main", 437.375)]
    assert (alone.input_errors, alone.input_warnings) == ([], [_part("main.ncu-rep.xz")])
    assert [c.folder for c in alone.captures] == ["cap"]
    assert [c.model_dump() for c in alone.coverage] == [folder.coverage[1].model_dump()]
    assert (alone.coverage[0].stage, alone.coverage[0].coverage_pct) == ("main", 100.0)


def _stopped(manifest: dict) -> None:
    """The capture stopped while ncu profiled the last shape (pending, no report)."""
    (shape,) = [s for s in manifest["shapes"] if s["group"] == UNFINISHED]
    shape.update(status="pending", report=None, kernels=None, replay_passes=[])
    shape.update(input_sha256=None, replay_seconds=None, replay_phases=None)


def test_an_unfinished_shape_s_kernels_in_a_report_given_alone_make_no_card(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """Its first kernel in `main` made a card of its own, judged on part of the shape: now the
    shape's card has the folder's error, and coverage counts it uncovered, as the folder does."""
    capture = copied_capture(tmp_path, _stopped, CAPTURE)
    whole = classify([capture], rules, jobs=1)
    alone = classify([capture / "main.ncu-rep.xz"], rules, jobs=1)
    assert [(c.group, c.status, len(c.kernels)) for c in alone.cards] == [
        (MAIN[0], "classified", 1),
        (UNFINISHED, "failed", 0),
    ]
    assert (
        alone.cards[1].error
        == whole.cards[2].error
        == (
            "not captured: the capture stopped while profiling this shape (1 of its kernels are in"
            " report main, left out); finish it with capture --resume"
        )
    )
    assert [c.model_dump() for c in alone.coverage] == [whole.coverage[1].model_dump()]
    assert alone.coverage[0].coverage_pct == 31.77
    assert alone.coverage[0].uncovered[0].why == f"no card: {alone.cards[1].error}"
    assert alone.input_errors == []


def test_reports_of_one_folder_are_one_part_and_with_their_folder_are_read_once(
    rules: LoadedRules, folder: CardFile
) -> None:
    both = classify([CAPTURE / "main.ncu-rep.xz", CAPTURE / "block.ncu-rep.xz"], rules, jobs=1)
    assert [_same(c) for c in both.cards] == [_same(c) for c in folder.cards]  # manifest order
    assert both.input_warnings == [_part("main.ncu-rep.xz"), _part("block.ncu-rep.xz")]
    assert [c.folder for c in both.captures] == ["cap"]
    again = classify([CAPTURE / "main.ncu-rep.xz", CAPTURE], rules, jobs=1)
    assert [_same(c) for c in again.cards] == [_same(c) for c in folder.cards]
    assert again.input_warnings == [
        "main.ncu-rep.xz: given more than once (alone, in a folder or by a link); read once"
    ]


def _one_stage(manifest: dict) -> None:
    """The compiled block recorded in stage main (its report is still `block`)."""
    (shape,) = [s for s in manifest["shapes"] if s["op"] == "compiled"]
    shape["stage"] = "main"
    stages = manifest["recorded_totals"]["stages"]
    block = stages.pop("block")
    stages["main"] = {key: round(stages["main"][key] + block[key], 3) for key in block}


def test_the_coverage_of_a_part_claims_no_shape_it_did_not_read(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """Stage main holds `main`'s shapes and the block (in report `block`, not given): the
    block's 10,397.9 us are what the cards of `main` do not cover, named as not read."""
    capture = copied_capture(tmp_path, _one_stage, CAPTURE)
    assert classify([capture], rules, jobs=1).coverage[0].coverage_pct == 100.0
    (main,) = classify([capture / "main.ncu-rep.xz"], rules, jobs=1).coverage
    assert (main.stage, main.covered_real_us, main.real_us) == ("main", 641.022, 11038.936)
    assert main.coverage_pct == round(100 * 641.022 / 11038.936, 2) == 5.81
    (rest,) = main.uncovered
    assert (rest.calls, rest.real_us) == (3, 10397.914)
    assert rest.name == "(shapes not in the reports read)"
    assert rest.why.startswith("in the recording but not among the reports read: in reports of")


def test_a_shard_s_report_given_alone_misses_no_shard(tmp_path: Path, rules: LoadedRules) -> None:
    """Shard 2/3's folder is an error without shards 1 and 3; its report alone is not."""
    capture = copied_capture(tmp_path, lambda m: m.update(shard="2/3"), CAPTURE)
    assert len(classify([capture], rules, jobs=1).input_errors) == 1
    alone = classify([capture / "main.ncu-rep.xz"], rules, jobs=1)
    assert ([c.group for c in alone.cards], alone.input_errors) == (MAIN, [])


def test_a_report_its_folder_s_manifest_does_not_name_stays_loose(
    tmp_path: Path, rules: LoadedRules
) -> None:
    capture = tmp_path / "cap"
    shutil.copytree(CAPTURE, capture)
    shutil.copy(capture / "main.ncu-rep.xz", capture / "other.ncu-rep.xz")
    alone = classify([capture / "other.ncu-rep.xz"], rules, jobs=1)
    assert [c.group for c in alone.cards] == [f"other:{group}" for group in MAIN]
    assert (alone.input_warnings, alone.captures, alone.coverage) == (
        [
            "other.ncu-rep.xz: in a capture folder whose manifest.json names it nowhere: read"
            " as a loose report"
        ],
        [],
        [],
    )
    (capture / "manifest.json").write_text('{"shapes": [')
    broken = classify([capture / "main.ncu-rep.xz"], rules, jobs=1)
    assert [c.group for c in broken.cards] == [f"main:{group}" for group in MAIN]
    assert broken.input_warnings == [
        "main.ncu-rep.xz: the manifest.json beside it cannot be read (manifest.json:1:13:"
        " invalid JSON: Expecting value): read as a loose report"
    ]


def test_the_reports_of_a_repeated_capture_given_alone(
    repeat_capture: Path, rules: LoadedRules
) -> None:
    """The counters report alone: each shape's first launch, a note that its repeats were not
    given; the duration report alone: no card judged on durations, each says what is missing;
    both: the folder's cards."""
    whole = classify([repeat_capture], rules, jobs=1).cards
    counters = classify([repeat_capture / "all.ncu-rep"], rules, jobs=1).cards
    assert [c.group for c in counters] == [c.group for c in whole] and len(whole) == 34
    assert all(c.measurement is None and c.error is None for c in counters)
    assert counters[0].notes[-1] == (
        "its repeats are in report all.times, not given: the card is its first launch alone"
        " (give that report too for their spread)"
    )
    times = classify([repeat_capture / "all.times.ncu-rep"], rules, jobs=1).cards
    assert {(c.status, c.error) for c in times} == {
        (
            "failed",
            "its report all.ncu-rep was not given, only other reports of its capture: give it"
            " too, or classify the capture folder",
        )
    }
    assert [c.stage for c in times] == [c.stage for c in whole]
    reports = [repeat_capture / "all.ncu-rep", repeat_capture / "all.times.ncu-rep"]
    both = classify(reports, rules, jobs=1).cards
    assert [_same(c) for c in both] == [_same(c) for c in whole]


def test_a_drill_down_report_given_alone_merges_as_its_folder_does(rules: LoadedRules) -> None:
    workload = ROOT / "fixtures" / "workload_h200_480x832"
    drill = ROOT / "fixtures" / "drill_h200_480x832"
    by_folder = classify([workload, drill], rules, jobs=2).cards
    by_report = classify([workload, drill / "all.ncu-rep.xz"], rules, jobs=2).cards
    settled = [(c.group, c.settled.settled_by) for c in by_report if c.settled is not None]
    assert settled == [(c.group, c.settled.settled_by) for c in by_folder if c.settled]
    assert len(settled) == 11
    manifest = json.loads((drill / "manifest.json").read_text())
    assert settled[0][1] == f"drill-down capture drill_h200_480x832 ({manifest['created_at']})"
