"""capture --repeat N against the stand-in ncu (tests/fakebin): the duration-only batch that
follows each counters batch, its status kept apart from the shapes' own, its faults, SIGTERM
and --resume. The stand-in writes real H200 reports without repeat ranges, so its duration
batches always come back without repeats: the failure path, checked here; the real path runs
on the H200 (tests/gpu) and is read back from fixtures/repeat_h200 (tests/verdicts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT
from test_capture import _cli_capture, _left_running, _terminated, fake_env

from ncu_classify.capture.manifest import ManifestBatch, manifest_shape, read_manifest
from ncu_classify.capture.ncu import launch_plan
from ncu_classify.capture.plan import CaptureOptions, plan_capture
from ncu_classify.capture.run import apply_status
from ncu_classify.replay.protocol import ShapeLine
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

SHAPES = ROOT / "fixtures" / "fault_h200" / "dit3.yaml"
__all__ = ["fake_env"]  # the stand-in ncu's environment, a fixture of test_capture


def test_repeat_plans_a_duration_batch_after_each_counters_batch(tmp_path: Path) -> None:
    options = CaptureOptions(repeat=4)
    plan = plan_capture(SHAPES, tmp_path / "raw", options)
    assert [(b.name, b.kind, len(b.entries)) for b in plan.batches] == [
        ("dit", "counters", 3), ("dit.times", "times", 3),
    ]  # fmt: skip
    times = plan.argv["dit.times"]
    assert times[times.index("--metrics") + 1] == "gpu__time_duration.sum"
    assert launch_plan(plan.batches[0], options) == {"launches": 1}
    assert launch_plan(plan.batches[1], options) == {
        "launches": 3, "first_repeat": 2, "device_inputs": True,
    }  # fmt: skip
    counters = CaptureOptions(repeat=4, repeat_counters=True)
    plan = plan_capture(SHAPES, tmp_path / "raw", counters)
    assert [b.kind for b in plan.batches] == ["counters"]  # every launch with all metrics
    assert launch_plan(plan.batches[0], counters) == {"launches": 4}
    assert len(plan_capture(SHAPES, tmp_path / "raw", CaptureOptions()).batches) == 1


def test_dry_run_counts_shapes_once(
    fake_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ncu_classify.cli.entry import run

    argv = ["capture", "--shapes", str(SHAPES), "-o", str(tmp_path / "x"), "--repeat", "4"]
    assert run([*argv, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "# batch dit.times: 3 shapes, their repeats (durations)" in lines
    assert lines[-1] == (
        "# 3 shapes to capture, 0 already captured; 3 shapes to measure 3 more times (--repeat 4)"
    )


def test_times_status_folding_keeps_the_shapes_own() -> None:
    """A duration batch that crashed fails the repeats of the shape in hand ("crashed") and of
    those after it ("not reached"), never the shapes' counters; interrupted, they stay pending."""
    plan = plan_capture(SHAPES, Path("/nonexistent"), CaptureOptions(repeat=3))
    entries = plan.batches[1].entries
    records = {e.group: manifest_shape(e) for e in entries}
    for rec in records.values():
        rec.status, rec.report, rec.input_sha256, rec.times_status = (
            "ok",
            "dit.ncu-rep",
            "ab",
            "pending",
        )
    record = ManifestBatch(
        name="dit.times", report="dit.times.ncu-rep", argv=[], exit_code=134,
        log="dit.times.ncu.log", groups=[e.group for e in entries], ended_by="finished",
        kind="times",
    )  # fmt: skip
    line = ShapeLine(group=entries[0].group, status="ok", input_sha256=None, launches=2)
    apply_status(records, record, [line], {})
    got = [
        (r.status, r.input_sha256, r.report, r.times_status, r.times_report)
        for r in records.values()
    ]
    assert got == [
        ("ok", "ab", "dit.ncu-rep", "ok", "dit.times.ncu-rep"),
        ("ok", "ab", "dit.ncu-rep", "failed", None),
        ("ok", "ab", "dit.ncu-rep", "failed", None),
    ]
    assert list(records.values())[1].times_error.startswith("crashed or was killed")
    record.ended_by = "interrupted"
    again = {e.group: manifest_shape(e) for e in entries}
    for rec in again.values():
        rec.times_status = "pending"
    apply_status(again, record, [line], {})
    assert [r.times_status for r in again.values()] == ["ok", "pending", "pending"]


def test_repeats_without_ranges_fail_alone_and_resume_times_only(
    fake_env: Path, tmp_path: Path
) -> None:
    """The stand-in's duration batch holds no `repeat#N` range: the repeats fail with why, the
    shapes stay ok with their kernels, the capture says so (exit 5 from the CLI), cards keep a
    note, and --resume runs a duration batch only."""
    out = tmp_path / "raw"
    proc = _cli_capture(out, "--repeat", "3")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 5, stderr
    assert "3 of 3 shapes have no repeats" in stderr and "Traceback" not in stderr
    manifest = read_manifest(out / "manifest.json")
    assert [(b.name, b.kind, b.ended_by) for b in manifest.batches] == [
        ("dit", "counters", "finished"), ("dit.times", "times", "finished"),
    ]  # fmt: skip
    assert [(s.status, s.kernels, s.times_status) for s in manifest.shapes] == [
        ("ok", 1, "failed")
    ] * 3
    assert manifest.shapes[0].times_error == "no kernel of its repeats was profiled"
    assert (manifest.repeat, manifest.repeat_counters) == (3, False)
    cards = classify([out], load_rules(), jobs=1).cards
    assert [c.measurement.repeats if c.measurement else None for c in cards] == [1, 1, 1]
    assert cards[0].measurement and cards[0].measurement.stability is None  # nothing repeated
    assert cards[0].measurement and cards[0].measurement.notes == [
        "2 of the 2 repeats asked are not measured (the manifest's times_status says why)"
    ]
    plan = plan_capture(fake_env, out, CaptureOptions(repeat=3, resume=True))
    assert [(b.name, b.kind, len(b.entries)) for b in plan.batches] == [("times", "times", 3)]
    with pytest.raises(Exception, match="another --repeat"):
        plan_capture(fake_env, out, CaptureOptions(repeat=5, resume=True))


def test_sigterm_in_the_duration_batch_keeps_the_counters(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while the repeats run: every shape keeps its counters (ok), the repeats not
    measured stay pending, the batch says interrupted, nothing keeps running."""
    monkeypatch.setenv("FAKE_NCU_MODE", "slow")
    monkeypatch.setenv("FAKE_SHAPE_SECONDS", "0.6")
    out = tmp_path / "raw"
    stderr = _terminated(out, "dit.times", "--repeat", "3")
    manifest = read_manifest(out / "manifest.json")
    assert [s.status for s in manifest.shapes] == ["ok"] * 3
    assert manifest.batches[-1].kind == "times" and manifest.batches[-1].ended_by == "interrupted"
    assert manifest.shapes[-1].times_status == "pending"
    assert "without their repeats yet" in stderr
    assert _left_running(out) == ""
    # --resume measures the repeats only: the shapes keep their counters and reports (found on
    # the H200: the resume had rebuilt their records as pending and replayed nothing)
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    kept = [(s.status, s.kernels, s.report, s.input_sha256) for s in manifest.shapes]
    proc = _cli_capture(out, "--repeat", "3", "--resume")
    _, stderr = proc.communicate(timeout=60)
    resumed = read_manifest(out / "manifest.json")
    assert [(s.status, s.kernels, s.report, s.input_sha256) for s in resumed.shapes] == kept
    assert [b.kind for b in resumed.batches] == ["counters", "times", "times"]
    assert resumed.batches[-1].groups == [  # pending, and failed (the stand-in's: no ranges)
        s.group for s in manifest.shapes if s.times_status != "ok"
    ]
    # the interrupted duration batch's report is not read as cards of its own
    found = classify([out], load_rules(), jobs=1)
    assert [c.group for c in found.cards] == [s.group for s in manifest.shapes]
    assert (  # (the resumed batch failed them: the stand-in's repeats have no ranges)
        "dit.times.ncu-rep: repeats of a duration batch that did not finish (interrupted), of"
        " shapes whose repeats are not measured (their times_status)"
    ) in "\n".join(found.input_warnings)
