"""A capture stopped while ncu profiled a shape (on the H200, the compiled Wan decode's capture
ran out of time 108 kernels into a 234-kernel graph): the report keeps that shape's first
kernels, the manifest has it pending. They are no card of their own (they had made a card of
a stage named after the report, judged on part of the graph); the shape's card says they were
left out, and how to finish it. The H200's compiled-block capture, its last shape's state set
as that capture wrote the unfinished graph's (pending, no report, no kernels)."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import ROOT, copied_capture

from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

CAPTURE = ROOT / "fixtures" / "compiled_h200" / "cap"
UNFINISHED = "main:aten._to_copy.default:1x128x8x240x360:bf16"


def _stopped_during_the_last_shape(manifest: dict) -> None:
    (shape,) = [s for s in manifest["shapes"] if s["group"] == UNFINISHED]
    shape.update(status="pending", report=None, kernels=None, replay_passes=[])
    shape.update(input_sha256=None, replay_seconds=None, replay_phases=None)


def test_an_unfinished_shape_s_kernels_are_no_card_of_their_own(
    tmp_path: Path, rules: LoadedRules
) -> None:
    capture = copied_capture(tmp_path, _stopped_during_the_last_shape, CAPTURE)
    cards = classify([capture], rules, jobs=1).cards
    assert [(c.group, c.status) for c in cards] == [
        ("block:compiled:block:g0:compiled", "classified"),
        ("main:aten.randn.default", "classified"),
        (UNFINISHED, "failed"),
    ]
    assert cards[2].error == (
        "not captured: the capture stopped while profiling this shape (1 of its kernels are in"
        " report main, left out); finish it with capture --resume"
    )
    assert cards[2].kernels == [] and cards[2].summed_kernel_us is None


def test_a_shape_that_failed_part_way_keeps_its_error_and_notes_its_kernels(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """Failed after some of its kernels were profiled (an out-of-memory part way): its own
    error stays, a note says where its profiled kernels are, and they make no card."""

    def failed(manifest: dict) -> None:
        _stopped_during_the_last_shape(manifest)
        (shape,) = [s for s in manifest["shapes"] if s["group"] == UNFINISHED]
        shape.update(status="failed", error="out of memory: CUDA out of memory")

    cards = classify([copied_capture(tmp_path, failed, CAPTURE)], rules, jobs=1).cards
    assert [c.group for c in cards][-1] == UNFINISHED and len(cards) == 3
    assert cards[2].error == "out of memory: CUDA out of memory"
    assert cards[2].notes[-1] == (
        "1 of its kernels are in report main, left out: profiled before it failed"
    )


BLOCK = "block:compiled:block:g0:compiled"


def test_a_shape_resumed_into_a_later_report_leaves_the_first_attempt_s_kernels_out(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """The capture stopped while profiling the compiled block (its kernels kept in report
    `block`), `capture --resume` captured it whole in `block.r2`: the block has one card, of
    block.r2's kernels, which says the first attempt's were left out (they had made a second
    card of the same shape, judged on a stopped attempt's kernels)."""

    def resumed(manifest: dict) -> None:
        (batch,) = [b for b in manifest["batches"] if b["name"] == "block"]
        manifest["batches"].append({**batch, "name": "block.r2", "report": "block.r2.ncu-rep"})
        (shape,) = [s for s in manifest["shapes"] if s["group"] == BLOCK]
        shape["report"] = "block.r2.ncu-rep"

    capture = copied_capture(tmp_path, resumed, CAPTURE)
    shutil.copy(capture / "block.ncu-rep.xz", capture / "block.r2.ncu-rep.xz")
    cards = classify([capture], rules, jobs=1).cards
    assert [(c.group, c.status, len(c.kernels)) for c in cards] == [
        (BLOCK, "classified", 13),
        ("main:aten.randn.default", "classified", 1),
        (UNFINISHED, "classified", 1),
    ]
    assert cards[0].ncu_output is not None and cards[0].ncu_output.endswith("block.r2.ncu-rep.xz")
    assert cards[0].notes[-1] == (
        "13 of its kernels are in report block, left out: an earlier attempt's, which did not"
        " finish"
    )


def test_a_shape_that_failed_part_way_in_the_report_its_record_names_keeps_no_kernels(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """A replay that fails after ncu profiled kernels of it (a status line `failed`: an
    out-of-memory part way) leaves the shape's record naming the batch's report: its kernels
    there are left out too, and a note says so (the failed card held the 13 kernels, and the
    summary counted their 3,491.9 us a call as the block's kernel time)."""

    def failed(manifest: dict) -> None:
        (shape,) = [s for s in manifest["shapes"] if s["group"] == BLOCK]
        shape.update(status="failed", error="out of memory: CUDA out of memory", kernels=None)

    cards = classify([copied_capture(tmp_path, failed, CAPTURE)], rules, jobs=1).cards
    assert [(c.group, c.status, len(c.kernels)) for c in cards] == [
        (BLOCK, "failed", 0),
        ("main:aten.randn.default", "classified", 1),
        (UNFINISHED, "classified", 1),
    ]
    assert cards[0].summed_kernel_us is None
    assert cards[0].error == "out of memory: CUDA out of memory"
    assert cards[0].notes[-1] == (
        "13 of its kernels are in report block, left out: profiled before it failed"
    )
