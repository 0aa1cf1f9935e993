"""`-o` never destroys what is at the path, for every command that writes (hardening item 2).

A device or FIFO is written into, `-` is standard output, a symlink is followed and stays a
symlink, and a folder, an input, a capture manifest or a report is refused with exit 2 before
anything is read.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from helpers import LEGACY, ROOT, SMOKE

from ncu_classify.cli.entry import run

CARDS = ROOT / "fixtures" / "workload_h200_480x832_40heads" / "cards.json"
RULES = ROOT / "rules" / "default.yaml"

# Every command that writes a file, as argv without its output path.
WRITERS = {
    "classify": ["classify", str(SMOKE / "dit.ncu-rep.xz")],
    "reclassify": ["reclassify", str(CARDS)],
    "summary": ["summary", str(CARDS), "--csv"],
    "schema": ["schema"],
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_dev_null_stays_a_device(command: str) -> None:
    assert run([*WRITERS[command], "-o", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_dash_is_standard_output(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*WRITERS[command], "-o", "-"]) == 0
    text = capsys.readouterr().out
    if command == "summary":
        header = "stage,primary,cards,calls,kernel_us_per_inference,share_of_stage,untimed"
        assert text.splitlines()[0] == header
    else:
        doc = json.loads(text)  # the data alone: tables and notes went to stderr
        assert ("cards" in doc) == (command != "schema")


def test_fifo_is_written_into(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert run([*WRITERS["classify"], "-o", str(fifo)]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert len(json.loads(got[0])["cards"]) == 3


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_symlink_is_followed_and_kept(command: str, tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "latest.txt"
    link.symlink_to(target.name)
    assert run([*WRITERS[command], "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert target.read_text() != "old"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file keeps its mode


@pytest.mark.parametrize(
    ("argv", "output", "message"),
    [
        (["classify", str(SMOKE)], SMOKE / "dit.ncu-rep.xz", "is named like a report"),
        (["classify", str(SMOKE)], SMOKE / "manifest.json", "is also an input"),
        (
            ["classify", str(SMOKE / "dit.ncu-rep.xz"), "--rules", str(RULES)],
            RULES,
            "also an input",
        ),
        (["reclassify", str(LEGACY)], LEGACY, "is also an input"),
        (["summary", str(CARDS), "--csv"], CARDS, "is also an input"),
        (["classify", str(SMOKE / "dit.ncu-rep.xz")], SMOKE / "vae.ncu-rep.xz", "report"),
        (["classify", str(SMOKE / "dit.ncu-rep.xz")], SMOKE / "manifest.json", "manifest"),
        (
            ["schema"],
            ROOT / "fixtures" / "workload_h200_480x832_40heads" / "manifest.json",
            "manifest",
        ),
        (["classify", str(SMOKE / "dit.ncu-rep.xz")], SMOKE, "is a folder"),
    ],
)
def test_precious_outputs_are_refused_before_any_work(
    argv: list[str], output: Path, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = output.read_bytes() if output.is_file() else None
    assert run([*argv, "-o", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ncu-classify: error: -o {output}: ") and message in err
    assert len(err.splitlines()) == 1
    if before is not None:
        assert output.read_bytes() == before


def test_symlink_to_an_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "cards_link.json"
    link.symlink_to(CARDS)
    before = CARDS.read_bytes()
    assert run(["reclassify", str(CARDS), "-o", str(link)]) == 2
    assert "is also an input" in capsys.readouterr().err
    assert CARDS.read_bytes() == before and link.is_symlink()


def test_output_in_a_missing_folder_or_under_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x")
    assert run(["schema", "-o", str(tmp_path / "no" / "such" / "x.json")]) == 2
    assert f"folder {tmp_path / 'no' / 'such'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    assert run(["schema", "-o", str(tmp_path / "file" / "x.json")]) == 2
    assert (tmp_path / "file").read_text() == "x"


def test_unwritable_place_is_exit_7_without_a_partial_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """/proc refuses new files even to root: the write fails, one line, nothing left."""
    assert run(["schema", "-o", "/proc/ncu-classify-test.json"]) == 7
    err = capsys.readouterr().err
    assert err.startswith("ncu-classify: error: /proc/ncu-classify-test.json: cannot write: ")
    assert len(err.splitlines()) == 1


def test_capture_output_must_be_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = ROOT / "fixtures" / "shapes" / "smoke.yaml"
    for bad, kind in ((Path("/dev/null"), "character device"), (shapes, "file")):
        assert run(["capture", "--shapes", str(shapes), "-o", str(bad), "--dry-run"]) == 2
        assert f"-o {bad}: is a {kind}, not a folder" in capsys.readouterr().err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("given", ["", "-"])
def test_capture_output_that_names_no_folder(
    given: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`-o ''` was read as the current folder (a capture spilled into it) and `-o -` made a
    folder named `-`: both are refused, before anything is written, with or without --dry-run."""
    shapes = ROOT / "fixtures" / "shapes" / "smoke.yaml"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu: a capture that went on would fail
    for dry in (["--dry-run"], []):
        assert run(["capture", "--shapes", str(shapes), "-o", given, *dry]) == 2
        err = capsys.readouterr().err
        assert f"-o {given!r}: capture writes a folder, not a stream" in err
    assert list(tmp_path.iterdir()) == []
