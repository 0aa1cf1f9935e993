"""`capture --drop-sources`: ncu's report is rewritten without its source blocks before it
enters the folder, the manifest says how many bytes went, the cards are those of the report
as ncu wrote it, and a report that cannot be rewritten (cut short, compressed, a full disk) is
kept exactly as ncu wrote it. The stand-in ncu serves real H200 reports (fixtures/fault_h200)."""

from __future__ import annotations

import json
import lzma
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, ROOT
from test_capture import fake_env

from ncu_classify.capture import slim
from ncu_classify.capture.plan import CaptureOptions
from ncu_classify.capture.run import capture
from ncu_classify.read.framing import check_report
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

FAULTS = ROOT / "fixtures" / "fault_h200"
DIT_123 = (120_954, 48_152)  # the real report of the three DiT shapes: bytes, source bytes
__all__ = ["fake_env"]  # the stand-in ncu's environment, a fixture of test_capture


def _cards_text(folder: Path) -> str:
    """The cards of a capture folder as JSON, without the folder's own name."""
    cards = classify([folder], load_rules(), jobs=1).cards
    return json.dumps([c.model_dump(mode="json") for c in cards]).replace(f'"{folder.name}/', '"F/')


def test_the_folder_gets_the_report_without_sources_and_the_same_cards(
    fake_env: Path, tmp_path: Path
) -> None:
    whole, dropped = tmp_path / "whole", tmp_path / "dropped"
    capture(fake_env, whole)
    manifest = capture(fake_env, dropped, CaptureOptions(drop_sources=True))
    assert [s.status for s in manifest.shapes] == ["ok"] * 3
    assert manifest.batches[0].dropped_source_bytes == DIT_123[1]
    kept = check_report(dropped / "dit.ncu-rep")
    assert (kept.size, kept.kernels, kept.source_blocks) == (DIT_123[0] - DIT_123[1], 3, [])
    assert check_report(whole / "dit.ncu-rep").size == DIT_123[0]
    assert (
        json.loads((dropped / "manifest.json").read_text())["batches"][0]["dropped_source_bytes"]
        == DIT_123[1]
    )
    assert _cards_text(dropped) == _cards_text(whole)
    assert not list((dropped / ".work").glob("*.slim"))
    # a capture without the flag writes neither field: releases before it read its manifest
    assert "dropped_source_bytes" not in (whole / "manifest.json").read_text()
    assert manifest.batches[0].sources_kept is None


def test_a_killed_runs_copy_is_removed_at_the_next_batch(fake_env: Path, tmp_path: Path) -> None:
    out = tmp_path / "raw"
    (out / ".work").mkdir(parents=True)
    stale = out / ".work" / "vae.partial.ncu-rep.slim"  # another batch's, SIGKILLed mid-copy
    stale.write_bytes(b"NVR\x00" + b"\0" * 100)
    capture(fake_env, out, CaptureOptions(drop_sources=True))
    assert not stale.exists()


def test_a_report_cut_short_is_kept_as_ncu_wrote_it(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "truncated")
    out = tmp_path / "raw"
    manifest = capture(fake_env, out, CaptureOptions(drop_sources=True))
    assert manifest.batches[0].dropped_source_bytes is None
    kept = manifest.batches[0].sources_kept or ""
    assert kept.startswith("left as ncu wrote it: ") and "truncated" in kept
    assert (out / "dit.ncu-rep").stat().st_size == int(DIT_123[0] * 0.6)
    assert [s.status for s in manifest.shapes] == ["failed"] * 3


@pytest.fixture
def report(tmp_path: Path) -> Path:
    plain = tmp_path / "dit.partial.ncu-rep"
    with lzma.open(FAULTS / "dit_123.ncu-rep.xz") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


def test_a_full_disk_leaves_the_report_untouched(
    report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = report.read_bytes()

    def full(plain: Path, lean: Path, info: object) -> None:
        lean.write_bytes(before[:1000])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(slim, "copy_without_sources", full)
    why = "left as ncu wrote it: its copy failed: No space left on device"
    assert slim.drop_sources(report) == why
    assert report.read_bytes() == before
    assert [p.name for p in report.parent.iterdir()] == [report.name]


def test_a_copy_missing_kernels_is_not_renamed_over_the_report(
    report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy is checked before it replaces anything: one that lost a kernel is thrown away."""
    before = report.read_bytes()
    cut = slim.copy_without_sources

    def short(plain: Path, lean: Path, info: object) -> None:
        cut(plain, lean, info)  # type: ignore[arg-type]
        lean.write_bytes(lean.read_bytes()[:-100])

    monkeypatch.setattr(slim, "copy_without_sources", short)
    why = str(slim.drop_sources(report))
    assert why.startswith("left as ncu wrote it: its copy failed: ") and "truncated" in why
    assert report.read_bytes() == before
    assert [p.name for p in report.parent.iterdir()] == [report.name]


def test_dropping_twice_drops_nothing_more_and_zstd_is_left(report: Path) -> None:
    assert slim.drop_sources(report) == DIT_123[1]
    once = report.read_bytes()
    assert slim.drop_sources(report) == 0
    assert report.read_bytes() == once
    zstd = report.with_name("dit.partial.ncu-repz")
    zstd.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 64)
    assert str(slim.drop_sources(zstd)).startswith("left as ncu wrote it: ")
    assert zstd.stat().st_size == 68


def test_paths_that_are_not_utf8(fake_env: Path, tmp_path: Path) -> None:
    """The manifest is JSON and ncu's argv names the folder: an -o path of other bytes is
    refused at once (it ended in an internal error after the capture); a shapes file of such
    a name is written with its odd byte escaped."""
    odd_out = os.fsdecode(bytes(tmp_path) + b"/raw\xfd")
    refused = subprocess.run(
        [*CLI, "capture", "--shapes", str(fake_env), "-o", odd_out],
        capture_output=True,
        text=True,
        errors="replace",
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(": the folder's path must be UTF-8 text")
    assert not Path(odd_out).exists()
    odd_shapes = Path(os.fsdecode(bytes(tmp_path) + b"/s\xff.yaml"))
    shutil.copyfile(fake_env, odd_shapes)
    manifest = capture(odd_shapes, tmp_path / "raw")
    assert manifest.shapes_file == "s\\xff.yaml"  # its name: the same from any folder
    assert [s.status for s in manifest.shapes] == ["ok"] * 3
