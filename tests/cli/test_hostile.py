"""Regressions found by a hostile run of the hardened tool: each test is one defect class that
the run showed (overwritten reports, adopted leftovers, mixed resumes, unlocked folders, write
failures, leaked scratch files, pending shapes, odd JSON, odd outputs)."""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import CLI, ROOT, SMOKE, copied_capture, terminal_signals

from ncu_classify.capture.folder import capture_lock
from ncu_classify.capture.manifest import read_manifest
from ncu_classify.cli.entry import run
from ncu_classify.core.text import printable
from ncu_classify.read import kernels as report_reader

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

FAKEBIN = ROOT / "tests" / "fakebin"
SHAPES = ROOT / "fixtures" / "fault_h200" / "dit3.yaml"
CARDS = ROOT / "fixtures" / "workload_h200_480x832_40heads" / "cards.json"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(ROOT / "fixtures" / "fault_h200"))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG"):
        monkeypatch.delenv(name, raising=False)


def _capture(out: Path, *extra: str) -> int:
    return run(["capture", "--shapes", str(SHAPES), "-o", str(out), *extra])


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err.strip()


def test_capture_never_writes_over_a_report_or_log_in_the_folder(
    fake: None, tmp_path: Path
) -> None:
    out = tmp_path / "u"
    out.mkdir()
    (out / "dit.ncu-rep").write_text("precious")
    (out / "dit.ncu.log").write_text("precious log")
    assert _capture(out) == 0
    assert (out / "dit.ncu-rep").read_text() == "precious"
    assert (out / "dit.ncu.log").read_text() == "precious log"
    manifest = read_manifest(out / "manifest.json")
    assert (manifest.batches[0].name, manifest.batches[0].report) == ("dit.r2", "dit.r2.ncu-rep")
    assert [s.status for s in manifest.shapes] == ["ok"] * 3


def test_a_stale_partial_report_is_never_adopted(
    fake: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed run left .work/dit.partial.ncu-rep; the next ncu writes none: no shape may be
    called ok on the leftover."""
    out = tmp_path / "raw"
    (out / ".work").mkdir(parents=True)
    leftover = lzma.decompress(
        (ROOT / "fixtures" / "fault_h200" / "dit_12.ncu-rep.xz").read_bytes()
    )
    (out / ".work" / "dit.partial.ncu-rep").write_bytes(leftover)
    monkeypatch.setenv("FAKE_NCU_MODE", "noreport")
    assert _capture(out) == 5
    manifest = read_manifest(out / "manifest.json")
    assert [s.status for s in manifest.shapes] == ["failed"] * 3
    assert manifest.shapes[0].error.startswith("replayed, but ncu wrote no report")
    assert not (out / "dit.ncu-rep").exists()


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (lambda text: "seed: 5\n" + text, "shapes file (sha256), seed"),
        (lambda text: text + "\n", "shapes file (sha256)"),
        (None, "--shard"),
    ],
)
def test_resume_continues_only_the_same_capture(
    change, what: str, fake: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "raw"
    shapes = tmp_path / "s.yaml"
    shapes.write_text(SHAPES.read_text())
    assert run(["capture", "--shapes", str(shapes), "-o", str(out), "--shard", "1/2"]) in (0, 5)
    before = (out / "manifest.json").read_bytes()
    capsys.readouterr()
    shard = "1/2"
    if change is None:
        shard = "2/2"
    else:
        shapes.write_text(change(shapes.read_text()))
    argv = ["capture", "--shapes", str(shapes), "-o", str(out), "--shard", shard, "--resume"]
    assert run(argv) == 2
    assert _err(capsys) == (
        f"ncu-classify: error: {out} holds a capture made with another {what}: --resume must"
        " continue the same capture; capture into another folder"
    )
    assert (out / "manifest.json").read_bytes() == before


def test_one_capture_at_a_time_per_folder(
    fake: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "raw"
    with capture_lock(out):
        assert _capture(out) == 2
        assert _err(capsys) == (
            f"ncu-classify: error: {out}: another capture is writing into this folder"
            f" (pid {os.getpid()}); wait for it or choose another folder"
        )
    assert _capture(out) == 0  # the lock went with its holder


def test_capture_write_failure_is_exit_7(fake: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert _capture(Path("/proc/ncu-classify-capture")) == 7
    assert _err(capsys).startswith("ncu-classify: error: /proc/ncu-classify-capture")


def test_capture_errors_are_one_line_off_a_terminal(
    fake: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _capture(tmp_path / "raw", "--ncu", "/etc/hostname") == 6
    assert _err(capsys).startswith("ncu-classify: error: --ncu /etc/hostname: ")
    assert _err_of(["--ncu", "/no/such/ncu"], tmp_path, capsys) == (
        "ncu-classify: error: --ncu /no/such/ncu: no such file; give the path of Nsight"
        " Compute's ncu"
    )


def _err_of(extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert _capture(tmp_path / "raw2", *extra) == 6
    return _err(capsys)


def test_pending_shapes_are_not_cards_without_kernels(
    fake: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "raw"
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    assert _capture(out) == 6
    assert run(["classify", str(out), "-o", str(tmp_path / "c.json")]) == 0
    cards = json.loads((tmp_path / "c.json").read_text())["cards"]
    assert {c["status"] for c in cards} == {"failed"}
    assert cards[0]["error"].startswith("not captured: the capture stopped before this shape")


def test_interrupted_classify_leaves_no_scratch_and_exits_130(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    for n in range(120):
        shutil.copy(SMOKE / "vae.ncu-rep.xz", reports / f"r{n}.ncu-rep.xz")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        argv = [*CLI, "classify", str(reports), "-o",
                str(tmp_path / "c.json"), "--jobs", "2"]  # fmt: skip
        proc = subprocess.Popen(
            argv, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=terminal_signals
        )
        deadline = time.monotonic() + 60
        while not any(scratch.rglob("*.ncu-rep")) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert stderr.strip().splitlines()[-1] == "ncu-classify: interrupted"
        assert list(scratch.iterdir()) == []
        assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize(
    ("source", "edit", "message"),
    [
        (CARDS, lambda d: d["cards"][0].update(dominant_kernel={}), "dominant_kernel: Input"),
        (CARDS, lambda d: d["cards"][0].update(summed_kernel_us=-5), "greater than or equal to 0"),
        (CARDS, lambda d: d["cards"][0].update(summed_kernel_us=True), "a valid number"),
        (CARDS, lambda d: d["cards"][0].update(summed_kernel_us="12"), "a valid number"),
    ],
)
def test_odd_values_in_cards_are_exit_3(
    source: Path, edit, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(source.read_text())
    edit(doc)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    assert run(["summary", str(path)]) == 3
    err = _err(capsys)
    assert re.match(re.escape(f"ncu-classify: error: {path}") + r":\d+:\d+: ", err), err
    assert message in err


def test_numbers_beyond_a_float_are_missing_not_infinite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = CARDS.read_text().replace('"summed_kernel_us":25.472', '"summed_kernel_us":1e400', 1)
    assert "1e400" in text
    path = tmp_path / "c.json"
    path.write_text(text.replace('"dur_us":25.472', '"dur_us":' + "9" * 5000, 1))
    assert run(["summary", str(path), "--by", "shape", "--csv"]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert row.startswith("dit,dit:linear:M4680_N5120_K144:bf16:bias,") and ",," in row


def test_rules_thresholds_must_be_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text(
        (ROOT / "rules" / "default.yaml").read_text().replace("value: 60}", "value: .nan}", 1)
    )
    argv = ["classify", str(SMOKE / "dit.ncu-rep.xz"), "-o", str(tmp_path / "c.json"),
            "--rules", str(rules)]  # fmt: skip
    assert run(argv) == 3
    assert "Input should be a finite number" in _err(capsys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seed: 100000000000000000000000\n", "seed: Input should be less than"),
        ("warmup: 1000000000000\n", "warmup: Input should be less than or equal to 1000"),
        ("M" * 0, "stages: Dictionary should have at least 1 item"),
    ],
)
def test_shapes_that_cannot_run_are_refused(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "s.yaml"
    body = "stages: {}\n" if not text else SHAPES.read_text()
    shapes.write_text(text + body)
    assert run(["capture", "--shapes", str(shapes), "-o", str(tmp_path / "raw"), "--dry-run"]) == 3
    assert message in _err(capsys)


def test_a_missing_field_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A manifest given as --shapes: say that `stages` is missing, not just `Field required`."""
    argv = ["capture", "--shapes", str(SMOKE / "manifest.json"), "-o", str(tmp_path / "r"),
            "--dry-run"]  # fmt: skip
    assert run(argv) == 3
    assert _err(capsys) == (
        f"ncu-classify: error: {SMOKE / 'manifest.json'}: stages: Field required"
    )


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("x.ncu-rep", "is named like a report or an ncu log"),
        ("x.ncu-rep.xz", "is named like a report or an ncu log"),
        ("dit.ncu.log", "is named like a report or an ncu log"),
        ("plain.txt/", "names a folder"),
        ("", "names a folder"),
    ],
)
def test_outputs_named_like_reports_or_folders(
    output: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "plain.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)  # not os.chdir: the worker's later tests would run there
    for argv in (["schema"], ["summary", str(CARDS)]):
        assert run([*argv, "-o", output]) == 2
        assert message in _err(capsys)
    assert (tmp_path / "plain.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt"]


def test_empty_input_path_and_one_line_for_one_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["classify", "", "-o", str(tmp_path / "c.json")]) == 2
    assert "an input is the empty string" in _err(capsys)
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"NVR\x00\x00\x00\x00\x00")
    assert run(["classify", str(bad), "-o", str(tmp_path / "c.json")]) == 4
    assert _err(capsys) == (
        f"ncu-classify: error: {bad}: corrupt: the file header at byte 4 holds no format version"
    )  # one line: ncu_report's native log lines are silenced too


def test_closed_or_full_stdout_is_exit_7(tmp_path: Path) -> None:
    base = [*CLI]
    closed = subprocess.run(
        [*base, "classify", str(SMOKE / "dit.ncu-rep.xz"), "-o", "-"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
        pass_fds=(), close_fds=True, preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert closed.returncode == 7 and "standard output is closed" in closed.stderr
    with open("/dev/full", "w") as full:
        done = subprocess.run([*base, "metrics"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 7
    assert done.stderr == (
        "ncu-classify: error: cannot write to standard output or error: No space left on device\n"
    )


def test_compression_bomb_is_refused_before_the_disk_fills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ncu_classify.read import inflate

    monkeypatch.setattr(inflate, "MIN_INFLATE_CAP", 1 << 20)
    bomb = tmp_path / "bomb.ncu-rep.xz"
    bomb.write_bytes(lzma.compress(b"NVR\x00" + b"\x00" * (64 << 20)))
    from ncu_classify.core.errors import ReportError

    with pytest.raises(ReportError, match=r"inflates to more than [0-9,]+ bytes \(200x its size\)"):
        report_reader.read_report(bomb, scratch=tmp_path)
    zeros = tmp_path / "zeros.ncu-rep.gz"
    import gzip

    zeros.write_bytes(gzip.compress(b"\x00" * 1000))
    with pytest.raises(ReportError, match=r"bad file header once decompressed"):
        report_reader.read_report(zeros, scratch=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.ncu-rep.xz", "zeros.ncu-rep.gz"]


def test_manifest_reports_must_be_names_in_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = copied_capture(
        tmp_path, lambda m: m["shapes"][0].update(report="../../etc/passwd.ncu-rep")
    )
    assert run(["classify", str(capture), "-o", str(tmp_path / "c.json")]) == 3
    assert "manifest field shapes.0.report: Value error, '../../etc/passwd.ncu-rep' is not a" in (
        _err(capsys)
    )


def test_bidirectional_overrides_are_shown_escaped() -> None:
    assert printable("cards\u202ejson.exe") == "cards\\u202ejson.exe"
    assert printable("a\u2066b\u2069") == "a\\u2066b\\u2069"
