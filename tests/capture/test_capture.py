"""capture's process handling, against a stand-in ncu (tests/fakebin) that checks the command
line, runs the real batch/status protocol in a child target, and leaves the real H200 report of
exactly the shapes that finished (fixtures/fault_h200, made by real ncu on the GPU host).
Real captures: tests/gpu/test_gpu.py.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import CLI, ROOT

from ncu_classify.capture.batch import plan_batches
from ncu_classify.capture.manifest import ManifestBatch, manifest_shape, read_manifest
from ncu_classify.capture.plan import CaptureOptions, plan_capture
from ncu_classify.capture.run import apply_status, capture
from ncu_classify.core.errors import EnvironmentProblem
from ncu_classify.replay.protocol import ShapeLine
from ncu_classify.shapes.file import load_shapes
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

FAKEBIN = ROOT / "tests" / "fakebin"
FAULTS = ROOT / "fixtures" / "fault_h200"
SHAPES = FAULTS / "dit3.yaml"
GROUPS = [
    "dit:linear:M4680_N5120_K5120:bf16:bias",
    "dit:linear:M4680_N5120_K144:bf16:bias",
    "dit:linear:M3_N30720_K5120:bf16:bias",
]


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(FAULTS))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG"):
        monkeypatch.delenv(name, raising=False)
    return SHAPES


def test_the_stand_in_runs_with_the_tests_own_python(tmp_path: Path) -> None:
    """Not whichever python3 comes first on PATH (a venv that is not activated, or none at all
    with this project's dependencies): the stand-in answers as ncu does."""
    decoy = tmp_path / "python3"
    decoy.write_text("#!/bin/sh\necho decoy python3 >&2\nexit 97\n")
    decoy.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([FAKEBIN / "ncu", "--version"], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "Version 2025.3.1.0 (build 0)"


def _states(manifest) -> list[tuple[str, int | None]]:  # type: ignore[no-untyped-def]
    return [(s.status, s.kernels) for s in manifest.shapes]


def _left_running(out: Path) -> str:
    """Processes whose command line names the capture folder (ncu or its target)."""
    found = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True)
    return found.stdout.strip()


def test_crash_status_folding() -> None:
    batch = plan_batches(load_shapes(SHAPES).entries())[0]
    records = {e.group: manifest_shape(e) for e in batch.entries}
    record = ManifestBatch(
        name="dit", report="dit.ncu-rep", argv=[], exit_code=134, log="dit.ncu.log",
        groups=GROUPS, ended_by="finished",
    )  # fmt: skip
    line = ShapeLine(group=GROUPS[0], status="ok", input_sha256="ab")
    assert apply_status(records, record, [line], {"torch": "2.11"}) == {"torch": "2.11"}
    assert [r.status for r in records.values()] == ["ok", "failed", "failed"]
    assert records[GROUPS[1]].error == (
        "crashed or was killed during its replay (ncu exit code 134; see dit.ncu.log)"
    )
    assert records[GROUPS[2]].error == "not reached (ncu exit code 134; see dit.ncu.log)"
    interrupted = {e.group: manifest_shape(e) for e in batch.entries}
    record.ended_by = "interrupted"
    apply_status(interrupted, record, [line], {})
    assert [r.status for r in interrupted.values()] == ["ok", "pending", "pending"]


def test_capture_writes_report_and_manifest(fake_env: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    out = tmp_path / "raw"
    manifest = capture(fake_env, out, progress=lambda d, t, g, s: seen.append((d, t, s)))
    assert seen == [(1, 3, "ok"), (2, 3, "ok"), (3, 3, "ok")]
    assert [(s.status, s.kernels, s.replay_passes) for s in manifest.shapes] == [("ok", 1, [9])] * 3
    assert (out / "dit.ncu-rep").exists() and not list((out / ".work").glob("*.ncu-rep"))
    assert manifest.host.ncu == "2025.3.1.0" and manifest.host.gpus[0]["memory_mib"] == ("143771")
    assert manifest.host.gpu == "fake" and "pid" not in manifest.host.model_dump()
    batch = manifest.batches[0]
    assert batch.argv[0].endswith("ncu") and (batch.exit_code, batch.ended_by) == (0, "finished")
    assert read_manifest(out / "manifest.json") == manifest
    assert oct((out / "manifest.json").stat().st_mode & 0o777) != "0o600"


def test_crashed_target_keeps_what_was_profiled(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_1")
    out = tmp_path / "raw"
    manifest = capture(fake_env, out)
    assert _states(manifest) == [("ok", 1), ("failed", None), ("failed", None)]
    assert manifest.batches[0].exit_code == 134
    assert manifest.shapes[1].error == (
        "crashed or was killed during its replay (ncu exit code 134; see dit.ncu.log)"
    )
    # The report ncu left holds the first shape's kernel only (real ncu, --launch-count 1).
    cards = classify([out], load_rules(), jobs=1).cards
    assert [(c.status, len(c.kernels)) for c in cards] == [
        ("classified", 1), ("failed", 0), ("failed", 0),
    ]  # fmt: skip


def test_hung_target_is_killed_at_the_deadline(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target ignores SIGTERM (stuck in a kernel): it is killed after the grace time, ncu
    ends, nothing is left running."""
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    out = tmp_path / "raw"
    began = time.monotonic()
    manifest = capture(fake_env, out, CaptureOptions(timeout_s=2, stop_grace_s=1))
    assert time.monotonic() - began < 30
    assert [s.status for s in manifest.shapes] == ["failed"] * 3
    assert manifest.shapes[0].error.startswith("still running at the --timeout deadline")
    assert (manifest.batches[0].exit_code, manifest.batches[0].ended_by) == (137, "timeout")
    assert _left_running(out) == ""


def test_no_report_written_fails_the_replayed_shapes(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ncu replayed everything but could not write its report (a full disk, say)."""
    monkeypatch.setenv("FAKE_NCU_MODE", "noreport")
    manifest = capture(fake_env, tmp_path / "raw")
    assert {s.status for s in manifest.shapes} == {"failed"}
    assert manifest.shapes[0].error.startswith("replayed, but ncu wrote no report (exit code 0")


def test_truncated_report_fails_its_shapes_in_the_manifest(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ncu's report is cut (killed while writing): no shape of it may be called ok."""
    monkeypatch.setenv("FAKE_NCU_MODE", "truncated")
    out = tmp_path / "raw"
    manifest = capture(fake_env, out)
    assert [s.status for s in manifest.shapes] == ["failed"] * 3
    assert manifest.shapes[0].error.startswith("its report cannot be read: ")
    assert "truncated" in manifest.shapes[0].error
    assert read_manifest(out / "manifest.json") == manifest


def test_counters_not_permitted(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    out = tmp_path / "raw"
    with pytest.raises(EnvironmentProblem, match=r"counters are not permitted .*ERR_NVGPUCTRPERM"):
        capture(fake_env, out)
    manifest = read_manifest(out / "manifest.json")
    assert [s.status for s in manifest.shapes] == ["pending"] * 3  # nothing was replayed
    assert manifest.batches[0].ended_by == "refused"


def test_no_gpu_is_an_environment_problem(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    (empty / "ncu").symlink_to(FAKEBIN / "ncu")
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(EnvironmentProblem, match=r"no NVIDIA GPU visible"):
        capture(fake_env, tmp_path / "raw")
    assert not (tmp_path / "raw").exists()


def test_gpu_index_out_of_range(fake_env: Path, tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match=r"GPU index 3 is out of range: this host has 1"):
        capture(fake_env, tmp_path / "raw", CaptureOptions(gpus=(3,)))


def test_ncu_too_old(fake_env: Path, tmp_path: Path) -> None:
    old = tmp_path / "bin"
    old.mkdir()
    (old / "ncu").write_text("#!/bin/sh\necho 'Version 2021.1.0.0 (build 1)'\n")
    (old / "ncu").chmod(0o755)
    with pytest.raises(EnvironmentProblem, match=r"ncu 2021.1.0.0 .* is too old"):
        capture(fake_env, tmp_path / "raw", CaptureOptions(ncu=str(old / "ncu")))


def test_resume_finishes_only_what_failed(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "raw"
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_1")
    first = capture(fake_env, out)
    kept_report = (out / "dit.ncu-rep").read_bytes()
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    plan = plan_capture(fake_env, out, CaptureOptions(resume=True))
    assert [e.group for b in plan.batches for e in b.entries] == GROUPS[1:]
    second = capture(fake_env, out, CaptureOptions(resume=True))
    assert _states(second) == [("ok", 1)] * 3
    assert [b.name for b in second.batches] == ["dit", "dit.r2"]
    assert (out / "dit.ncu-rep").read_bytes() == kept_report  # nothing captured is rewritten
    # Each shape's card takes its kernels from the report its record names, never from both
    # (dit.r2 holds all three shapes' kernels: the stand-in profiles every shape it replays).
    cards = classify([out], load_rules(), jobs=1).cards
    assert [(len(c.kernels), Path(c.ncu_output or "").name) for c in cards] == [
        (1, "dit.ncu-rep"), (1, "dit.r2.ncu-rep"), (1, "dit.r2.ncu-rep"),
    ]  # fmt: skip
    assert first.shapes[0].input_sha256 == second.shapes[0].input_sha256


def test_two_gpus_run_in_parallel_each_on_its_device(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    smi = tmp_path / "smi"
    smi.mkdir()
    (smi / "nvidia-smi").write_text(
        "#!/bin/sh\necho '0, NVIDIA H200, 580, GPU-a, 143771'\necho '1, NVIDIA H200, 580, GPU-b,"
        " 143771'\n"
    )
    (smi / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("FAKE_SHAPE_SECONDS", "0.8")
    manifest = capture(fake_env, tmp_path / "raw", CaptureOptions(gpus=(0, 1), max_batch=1))
    assert _states(manifest) == [("ok", 1)] * 3
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(b.gpu for b in manifest.batches) == [0, 0, 1]
    assert sorted(r["device"] for r in runs) == ["0", "0", "1"]
    on_gpu = {str(g): [r for r in runs if r["device"] == str(g)] for g in (0, 1)}
    # The GPU-1 run overlaps a GPU-0 run in time; runs on one GPU never overlap.
    one = on_gpu["1"][0]
    assert any(r["start"] < one["end"] and one["start"] < r["end"] for r in on_gpu["0"])
    first, second = sorted(on_gpu["0"], key=lambda r: r["start"])
    assert first["end"] <= second["start"]


def _cli_capture(out: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [*CLI, "capture", "--shapes", str(SHAPES)]
    return subprocess.Popen(
        [*argv, "-o", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_lines(status: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if status.exists() and status.read_text().count('"kind": "shape"') >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{status}: fewer than {count} shape lines after 60 s")


def _terminated(out: Path, batch: str, *extra: str) -> str:
    """Start a capture, SIGTERM it once `batch` has replayed a shape; its stderr, after
    checking that it stopped as interrupted (exit 130) without a traceback."""
    proc = _cli_capture(out, *extra)
    _wait_for_lines(out / ".work" / f"{batch}.status.jsonl", 1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    return stderr


def test_sigterm_keeps_finished_shapes_and_resume_finishes(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM mid-batch: the target finishes its shape and stops, ncu writes the report of the
    shapes done, those are `ok` with their kernels, the rest `pending`; nothing keeps running;
    --resume replays only the rest."""
    monkeypatch.setenv("FAKE_NCU_MODE", "slow")
    monkeypatch.setenv("FAKE_SHAPE_SECONDS", "1")
    out = tmp_path / "raw"
    stderr = _terminated(out, "dit")
    manifest = read_manifest(out / "manifest.json")
    done = sum(s.status == "ok" for s in manifest.shapes)
    assert 1 <= done < 3
    assert _states(manifest) == [("ok", 1)] * done + [("pending", None)] * (3 - done)
    assert f"kept {done} captured shapes (0 failed, {3 - done} not started)" in stderr
    assert manifest.batches[0].ended_by == "interrupted"
    assert _left_running(out) == ""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    resumed = capture(SHAPES, out, CaptureOptions(resume=True))
    assert _states(resumed) == [("ok", 1)] * 3
    assert [len(b.groups) for b in resumed.batches] == [3, 3 - done]


def test_second_sigterm_kills_at_once(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target ignores SIGTERM; a second SIGTERM does not wait out the grace time."""
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    out = tmp_path / "raw"
    proc = _cli_capture(out, "--stop-grace", "300")
    deadline = time.monotonic() + 60
    while not (out / ".work" / "dit.status.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - began < 10
    assert _left_running(out) == ""
    assert [s.status for s in read_manifest(out / "manifest.json").shapes] == ["pending"] * 3


def test_capture_restores_the_sigterm_handler(
    fake_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """capture run in-process must leave no SIGTERM handler behind: forked children would
    inherit it (the suite once hung that way)."""
    from ncu_classify.cli.entry import run

    before = signal.getsignal(signal.SIGTERM)
    assert run(["capture", "--shapes", str(SHAPES), "-o", str(tmp_path / "raw")]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    assert run(["capture", "--shapes", str(SHAPES), "-o", str(tmp_path / "x"), "--ncu", "no"]) == 6
    assert signal.getsignal(signal.SIGTERM) is before
    assert "ncu not found ('no' is not on PATH)" in capsys.readouterr().err


def test_parallel_replays_split_the_cpu_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from ncu_classify.capture.ncu import replay_env

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert replay_env(1, 2)["OMP_NUM_THREADS"] == "16"
    assert replay_env(1, 2)["CUDA_VISIBLE_DEVICES"] == "1"
    assert "OMP_NUM_THREADS" not in replay_env(None, 1)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert replay_env(0, 2)["OMP_NUM_THREADS"] == "3"


@pytest.mark.parametrize(
    ("flag", "value", "complaint"),
    [
        ("--config-file", "on", "capture must pass --config-file off"),
        ("--clock-control", "base", "capture must pass --clock-control none"),
        ("--replay-mode", "application", "capture must pass --replay-mode kernel"),
    ],
)
def test_the_stand_in_ncu_refuses_other_flags(
    flag: str, value: str, complaint: str, fake_env: Path, tmp_path: Path
) -> None:
    """The stand-in is strict, so the tests above prove capture's real command line."""
    plan = plan_capture(SHAPES, tmp_path / "raw", CaptureOptions())
    argv = list(plan.argv["dit"])
    argv[argv.index(flag) + 1] = value
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and complaint in done.stderr
    unknown = subprocess.run([argv[0], "--set", "full", *argv[1:]], capture_output=True, text=True)
    assert unknown.returncode == 1 and "unrecognised option '--set'" in unknown.stderr


def test_a_killed_capture_leaves_nothing_running(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL of the capture process (no handler can run): its ncu lives in its own session,
    so the target notices between two shapes that nothing will read its results and stops."""
    monkeypatch.setenv("FAKE_NCU_MODE", "slow")
    monkeypatch.setenv("FAKE_SHAPE_SECONDS", "1")
    out = tmp_path / "raw"
    proc = _cli_capture(out)
    _wait_for_lines(out / ".work" / "dit.status.jsonl", 1)
    proc.kill()
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while _left_running(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _left_running(out) == ""
    lines = (out / ".work" / "dit.status.jsonl").read_text().count('"kind": "shape"')
    assert lines < 3  # it stopped early instead of replaying the whole batch


def _reads_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every opening of `path` in this process from now on (os.open, io.open, open: the shapes
    file's loader, a hash of its bytes, whatever reads it), as the function that opened it."""
    opened: list[str] = []

    def counting(real):  # type: ignore[no-untyped-def]
        def opener(file, *args, **kwargs):  # type: ignore[no-untyped-def]
            if isinstance(file, (str, os.PathLike)) and Path(file) == path:
                opened.append(real.__name__)
            return real(file, *args, **kwargs)

        return opener

    for module, name in ((os, "open"), (io, "open"), (builtins, "open")):
        monkeypatch.setattr(module, name, counting(getattr(module, name)))
    return opened


def test_a_capture_reads_its_shapes_file_once(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One plan, from one reading of the shapes file, serves the checks made before the host is
    probed and the run (it was read three times: parsed twice, hashed once), also on --resume."""
    out = tmp_path / "raw"
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_1")
    reads = _reads_of(fake_env, monkeypatch)
    first = capture(fake_env, out)
    assert (reads, _states(first)) == (["open"], [("ok", 1), ("failed", None), ("failed", None)])
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    reads.clear()
    second = capture(fake_env, out, CaptureOptions(resume=True))
    assert (reads, _states(second)) == (["open"], [("ok", 1)] * 3)
    assert second.shapes_sha256 == hashlib.sha256(fake_env.read_bytes()).hexdigest()


def test_resume_keeps_shapes_whose_report_was_compressed_since(
    fake_env: Path, tmp_path: Path
) -> None:
    """classify reads `all.ncu-rep.xz` where the manifest names `all.ncu-rep`; --resume
    captured every shape of such a folder again, as if its report were gone."""
    import lzma
    import shutil

    out = tmp_path / "raw"
    capture(fake_env, out, CaptureOptions())
    (report,) = out.glob("*.ncu-rep")
    with report.open("rb") as src, lzma.open(f"{report}.xz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    report.unlink()
    plan = plan_capture(fake_env, out, CaptureOptions(resume=True))
    assert (plan.batches, [r.group for r in plan.kept]) == ([], GROUPS)
    (out / f"{report.name}.xz").unlink()
    again = plan_capture(fake_env, out, CaptureOptions(resume=True))
    assert (again.kept, [e.group for b in again.batches for e in b.entries]) == ([], GROUPS)
