"""Careless and hostile use of the repeated measurements (issue 20), each a defect found by a
review of `capture --repeat`, `classify` of repeated captures and `diff` of repeated cards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from ncu_classify.cards.model import CardFile
from ncu_classify.core.noise import Noise
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening


def test_a_missing_duration_report_is_an_input_error(repeat_capture: Path, tmp_path: Path) -> None:
    """The manifest names all.times.ncu-rep for 34 timed shapes: without it, exit 4 naming
    it (was: exit 0, and verdicts called stable on no repeat at all)."""
    folder = tmp_path / "raw"
    shutil.copytree(repeat_capture, folder)
    (folder / "all.times.ncu-rep").unlink()
    done = run_cli("classify", str(folder), "-o", str(tmp_path / "cards.json"))
    assert done.rc == 4, done.stderr
    missing = f"{folder / 'all.times.ncu-rep'}: missing: the capture's manifest.json names it"
    assert f"{missing} for 34 captured shapes" in done.stderr
    cards = json.loads((tmp_path / "cards.json").read_text())["cards"]
    assert all(c["measurement"]["stability"] is None for c in cards)  # no repeat: no verdict on it
    assert all(c["measurement"]["repeats"] == 1 for c in cards)


def test_a_duration_report_read_alone_is_said(repeat_capture: Path, tmp_path: Path) -> None:
    """Out of its folder (a link to it elsewhere; in its folder it is read with the manifest)."""
    alone = tmp_path / "all.times.ncu-rep"
    alone.symlink_to(repeat_capture / "all.times.ncu-rep")
    cards = classify([alone], load_rules(), jobs=1)
    assert [w for w in cards.input_warnings if "read without their capture folder" in w] == [
        "all.times.ncu-rep: launches of capture --repeat read without"
        " their capture folder: each card is its first launch alone (durations only, if a"
        " duration batch's report): classify the folder"
    ]


def test_a_noise_file_without_run_to_run_is_said(repeat_capture: Path) -> None:
    noise = Noise(id="bare", duration_pct=5.0)
    cards: CardFile = classify([repeat_capture], load_rules(), jobs=2, noise=noise)
    assert cards.input_warnings == [
        "noise bare: no run_to_run: the stability of repeated verdicts rests on each capture's"
        " own spread alone, which misses what moves between captures"
    ]


def test_allow_inconclusive_needs_a_gate(tmp_path: Path) -> None:
    cards = ROOT / "reports" / "diff" / "cards" / "w480_gpu0.json"
    done = run_cli("diff", str(cards), str(cards), "--allow-inconclusive")
    assert done.rc == 2
    assert "--allow-inconclusive relaxes a gate: it needs --fail-on" in done.stderr


def test_a_manifest_repeat_of_the_wrong_type_is_refused(
    repeat_capture: Path, tmp_path: Path
) -> None:
    for value in (True, "five", 0, 1000):
        folder = tmp_path / f"raw_{value}"
        shutil.copytree(repeat_capture, folder)
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["repeat"] = value
        (folder / "manifest.json").write_text(json.dumps(manifest))
        done = run_cli("classify", str(folder), "-o", str(tmp_path / "cards.json"))
        assert done.rc == 3, (value, done.stderr)
        assert "repeat" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_duration_batch_stopped_part_way_is_said_as_such(
    repeat_capture: Path, tmp_path: Path
) -> None:
    """The capture stopped while the duration batch timed the 4680x5120x144 linear (its
    times_status pending, its repeats in all.times): they are not used, and the warning says
    the batch did not finish (it said the shapes were timed again later, which they were
    not), and the card that its repeats are not measured."""
    group = "dit:linear:M4680_N5120_K144:bf16:bias"
    folder = tmp_path / "raw"
    shutil.copytree(repeat_capture, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (shape,) = [s for s in manifest["shapes"] if s["group"] == group]
    shape.update(times_status="pending", times_report=None)
    (batch,) = [b for b in manifest["batches"] if b["kind"] == "times"]
    batch["ended_by"] = "interrupted"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    cards = classify([folder], load_rules(), jobs=1)
    assert cards.input_warnings == [
        "raw/all.times.ncu-rep: repeats of a duration batch that did not finish (interrupted),"
        " of shapes whose repeats are not measured (their times_status); not used: capture"
        " --resume times them"
    ]
    (card,) = [c for c in cards.cards if c.group == group]
    assert card.measurement is not None and card.measurement.repeats == 1
    assert card.measurement.notes == [
        "4 of the 4 repeats asked are not measured (the manifest's times_status says why)"
    ]
