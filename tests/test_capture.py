"""capture's pure parts (ncu argv, batches, status folding) and its process handling.

The process-handling tests run a stand-in `ncu` (tests/fakebin) that writes status lines and
copies a real H200 report; they check orchestration only. Real captures: tests/test_gpu.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT, SMOKE

from ncu_classify.capture import (
    CaptureOptions,
    apply_status,
    capture,
    plan_batches,
    plan_capture,
    select_shard,
    shape_record,
)
from ncu_classify.errors import EnvironmentProblem, UsageError
from ncu_classify.manifest import BatchRecord, read_manifest
from ncu_classify.metrics import capture_metric_names
from ncu_classify.ncu_cmd import ncu_argv
from ncu_classify.shapes import load_shapes

FAKEBIN = Path(__file__).parent / "fakebin"


def test_ncu_argv_filters_by_range_and_leaves_clocks_alone() -> None:
    argv = ncu_argv(
        ncu="ncu",
        report_stem=Path("raw/dit"),
        metrics=["a.sum", "b.avg"],
        groups=["dit:linear:M1_N1_K1:bf16"],
        target=["python", "-m", "x"],
    )
    assert argv == [
        "ncu",
        "--config-file",
        "off",
        "--clock-control",
        "none",
        "--replay-mode",
        "kernel",
        "--target-processes",
        "all",
        "--nvtx",
        "--nvtx-include",
        "dit:linear:M1_N1_K1:bf16/",
        "--metrics",
        "a.sum,b.avg",
        "--export",
        "raw/dit",
        "--force-overwrite",
        "python",
        "-m",
        "x",
    ]


def test_capture_asks_for_the_catalog_metrics_once_each() -> None:
    names = capture_metric_names()
    assert len(names) == len(set(names)) == 21
    assert "gpu__time_duration.sum" in names and "sm__cycles_elapsed.avg.per_second" in names


def test_one_batch_per_stage_in_file_order() -> None:
    shapes = load_shapes(ROOT / "fixtures" / "shapes" / "smoke.yaml")
    batches = plan_batches(shapes.entries())
    assert [(b.name, len(b.entries)) for b in batches] == [
        ("dit", 3),
        ("vae", 3),
        ("attention", 4),
        ("output", 1),
    ]
    record = shape_record(batches[1].entries[0])
    assert record.shape_parameters["output"] == [1, 384, 2, 120, 52]
    assert record.op == "aten.conv3d.default" and record.nominal_mac_flops == 99373547520


def test_crash_marks_the_running_shape_and_the_rest() -> None:
    shapes = load_shapes(ROOT / "fixtures" / "shapes" / "smoke.yaml")
    batch = plan_batches(shapes.entries())[0]
    records = {e.group: shape_record(e) for e in batch.entries}
    groups = [e.group for e in batch.entries]
    record = BatchRecord(
        name="dit", report="dit.ncu-rep", argv=[], exit_code=134, log="dit.ncu.log", groups=groups
    )
    lines = [
        {"kind": "env", "torch": "2.11"},
        {"kind": "shape", "group": groups[0], "status": "ok", "input_sha256": "ab"},
    ]
    env = apply_status(records, record, lines)
    assert env == {"torch": "2.11"}
    assert [r.status for r in records.values()] == ["ok", "failed", "failed"]
    assert records[groups[1]].error == (
        "crashed or was killed during its replay (ncu exit code 134; see dit.ncu.log)"
    )
    assert records[groups[2]].error == "not reached (ncu exit code 134; see dit.ncu.log)"


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(
        "stages:\n  dit:\n"
        "    - {op: linear, M: 4680, N: 5120, K: 5120, dtype: bf16, bias: true}\n"
        "    - {op: linear, M: 4680, N: 5120, K: 144, dtype: bf16, bias: true}\n"
        "    - {op: linear, M: 3, N: 30720, K: 5120, dtype: bf16, bias: true}\n"
    )
    monkeypatch.setenv("FAKE_NCU_REPORT", str(SMOKE / "dit.ncu-rep.xz"))
    return shapes


def test_capture_writes_report_and_manifest(fake_env: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    out = tmp_path / "raw"
    capture(fake_env, out, progress=lambda d, t, g, s: seen.append((d, t, s)))
    assert seen == [(1, 3, "ok"), (2, 3, "ok"), (3, 3, "ok")]
    manifest = read_manifest(out / "manifest.json")
    assert [(s.status, s.kernels, s.replay_passes) for s in manifest.shapes] == [("ok", 1, [9])] * 3
    assert (out / "dit.ncu-rep").exists() and not list((out / ".work").glob("*.ncu-rep"))
    assert (
        manifest.host["ncu"] == "2025.3.1.0" and manifest.host["gpus"][0]["name"] == "NVIDIA H200"
    )
    assert manifest.batches[0].argv[0].endswith("ncu") and manifest.batches[0].exit_code == 0
    assert oct((out / "manifest.json").stat().st_mode & 0o777) != "0o600"


def test_crashed_target_keeps_what_was_captured(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_1")
    out = tmp_path / "raw"
    manifest = capture(fake_env, out)
    assert [s.status for s in manifest.shapes] == ["ok", "failed", "failed"]
    assert manifest.batches[0].exit_code == 134
    assert json.loads((out / "manifest.json").read_text())["shapes"][1]["error"].startswith(
        "crashed or was killed during its replay"
    )


def test_hung_ncu_is_killed_at_the_deadline(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    manifest = capture(fake_env, tmp_path / "raw", CaptureOptions(timeout_s=2))
    assert all(s.status == "failed" for s in manifest.shapes)
    assert manifest.batches[0].exit_code is not None and manifest.batches[0].exit_code < 0


def test_no_gpu_is_an_environment_problem(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    (empty / "ncu").symlink_to(FAKEBIN / "ncu")
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(EnvironmentProblem, match=r"no NVIDIA GPU visible"):
        capture(fake_env, tmp_path / "raw")


WORKLOAD = ROOT / "fixtures" / "shapes" / "workload_480x832.yaml"


def test_shards_partition_the_shapes_deterministically() -> None:
    """Shards are pinned: a job array relies on a shape landing in the same shard on every
    host, release and file order (sha256 of the group id, mod N)."""
    entries = load_shapes(WORKLOAD).entries()
    shards = [select_shard(entries, k, 4) for k in range(1, 5)]
    groups = [e.group for shard in shards for e in shard]
    assert sorted(groups) == sorted(e.group for e in entries) and len(set(groups)) == 34
    assert [(len(s), s[0].group) for s in shards] == [
        (8, "dit:linear:M4680_N5120_K144:bf16:bias"),
        (14, "dit:linear:M4680_N5120_K5120:bf16:bias"),
        (7, "vae:conv3d:in1x192x3x242x106_w192x192x3x3x3_s1x1x1_p0x0x0:fp32:tf32"),
        (5, "dit:linear:M1170_N15360_K5120:bf16:bias"),
    ]
    reordered = list(reversed(entries))
    assert {e.group for e in select_shard(reordered, 2, 4)} == {e.group for e in shards[1]}
    with pytest.raises(UsageError, match=r"--shard 5/4"):
        select_shard(entries, 5, 4)


def test_max_batch_splits_stages_and_names_stay_unique() -> None:
    entries = load_shapes(WORKLOAD).entries()
    batches = plan_batches(entries, max_batch=5)
    assert [b.name for b in batches][:5] == ["dit-1", "dit-2", "dit-3", "vae-1", "vae-2"]
    assert max(len(b.entries) for b in batches) == 5
    again = plan_batches(entries[:3], 0, frozenset({"dit"}))
    assert [b.name for b in again] == ["dit.r2"]


def test_dry_run_prints_the_command_lines(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ncu_classify.cli import app

    result = CliRunner().invoke(
        app,
        [
            "capture",
            "--shapes",
            str(WORKLOAD),
            "-o",
            str(tmp_path / "raw"),
            "--dry-run",
            "--max-batch",
            "20",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    commands = [x for x in lines if x.startswith("ncu ")]
    assert len(commands) == 4  # one per stage: no stage has more than 20 shapes
    assert "--nvtx-include dit:linear:M4680_N5120_K144:bf16:bias/ --nvtx-include" in commands[0]
    assert "# batch vae: 17 shapes" in lines
    assert lines[-1] == "# 34 shapes to capture, 0 already captured"
    assert not (tmp_path / "raw").exists()


def test_existing_capture_needs_resume(fake_env: Path, tmp_path: Path) -> None:
    out = tmp_path / "raw"
    capture(fake_env, out)
    with pytest.raises(UsageError, match=r"already holds a capture: pass --resume"):
        plan_capture(fake_env, out, CaptureOptions())
    plan = plan_capture(fake_env, out, CaptureOptions(resume=True))
    assert plan.batches == [] and len(plan.kept) == 3


def test_resume_finishes_only_what_failed(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "raw"
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_1")
    first = capture(fake_env, out)
    assert [s.status for s in first.shapes] == ["ok", "failed", "failed"]
    kept_report = (out / "dit.ncu-rep").read_bytes() if (out / "dit.ncu-rep").exists() else None
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    plan = plan_capture(fake_env, out, CaptureOptions(resume=True))
    assert [e.group for b in plan.batches for e in b.entries] == [
        s.group for s in first.shapes if s.status != "ok"
    ]
    second = capture(fake_env, out, CaptureOptions(resume=True))
    assert [s.status for s in second.shapes] == ["ok", "ok", "ok"]
    assert [b.name for b in second.batches] == ["dit", "dit.r2"]
    assert (out / "dit.r2.ncu-rep").exists()
    # Each shape's card takes its kernels from the report its record names, never from both.
    from ncu_classify.classify import classify
    from ncu_classify.rules import load_rules

    cards = classify([out], load_rules(), jobs=1).cards
    assert [(len(c.kernels), Path(c.ncu_output or "").name) for c in cards[:3]] == [
        (1, "dit.ncu-rep"),
        (1, "dit.r2.ncu-rep"),
        (1, "dit.r2.ncu-rep"),
    ]
    if kept_report is not None:
        assert (out / "dit.ncu-rep").read_bytes() == kept_report


def test_no_report_written_fails_the_replayed_shapes(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ncu replayed everything but could not write its report (a full disk, say)."""
    monkeypatch.delenv("FAKE_NCU_REPORT")
    manifest = capture(fake_env, tmp_path / "raw")
    assert {s.status for s in manifest.shapes} == {"failed"}
    assert manifest.shapes[0].error.startswith("replayed, but ncu wrote no report (exit code 0")


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


def test_two_gpus_run_batches_in_parallel(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    smi = tmp_path / "smi"
    smi.mkdir()
    (smi / "nvidia-smi").write_text(
        "#!/bin/sh\necho '0, NVIDIA H200, 580, GPU-a'\necho '1, NVIDIA H200, 580, GPU-b'\n"
    )
    (smi / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi}{os.pathsep}{os.environ['PATH']}")
    manifest = capture(fake_env, tmp_path / "raw", CaptureOptions(gpus=(0, 1), max_batch=1))
    assert sorted(b.gpu for b in manifest.batches) == [0, 0, 1]
    assert [s.status for s in manifest.shapes] == ["ok"] * 3


def test_one_process_for_all_stages_and_one_per_gpu() -> None:
    from ncu_classify.capture import input_units, unit_cost

    entries = load_shapes(WORKLOAD).entries()
    assert [b.name for b in plan_batches(entries, per_stage=False)] == ["all"]
    opts = CaptureOptions(per_stage=False, gpus=(0, 1))
    plan = plan_capture(WORKLOAD, Path("/nonexistent/raw"), opts)
    assert [b.name for b in plan.batches] == ["gpu1", "gpu2"]
    groups = [e.group for b in plan.batches for e in b.entries]
    assert sorted(groups) == sorted(e.group for e in entries)
    units = input_units(entries)
    # All four attention shapes (FA2/FA3 substitutes, 4680 or 28080 of the same 29640-key
    # buffer) draw the same tensors: one unit.
    assert [len(u) for u in units if u[0][1].stage == "attention"] == [4]
    where = {e.group: (n, i) for n, b in enumerate(plan.batches) for i, e in enumerate(b.entries)}
    for unit in units:  # each unit on one GPU, its shapes back to back
        spots = [where[e.group] for _, e in unit]
        assert len({n for n, _ in spots}) == 1
        assert [i for _, i in spots] == list(range(spots[0][1], spots[0][1] + len(unit)))
    loads = [sum(unit_cost(u) for u in units if where[u[0][1].group][0] == n) for n in (0, 1)]
    assert abs(loads[0] - loads[1]) <= max(unit_cost(u) for u in units)  # LPT bound


def test_parallel_replays_split_the_cpu_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from ncu_classify.capture import replay_env

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert replay_env(1, 2)["OMP_NUM_THREADS"] == "16"
    assert replay_env(1, 2)["CUDA_VISIBLE_DEVICES"] == "1"
    assert "OMP_NUM_THREADS" not in replay_env(None, 1)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert replay_env(0, 2)["OMP_NUM_THREADS"] == "3"


def test_sigterm_stops_ncu_and_resume_finishes(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed capture (SIGTERM) stops its ncu, keeps the manifest; --resume completes it."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "raw"
    env = {**os.environ, "FAKE_NCU_MODE": "hang"}
    cli = [
        sys.executable,
        "-m",
        "ncu_classify.cli",
        "capture",
        "--shapes",
        str(fake_env),
        "-o",
        str(out),
    ]
    proc = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / ".work" / "dit.status.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "ncu-classify: interrupted" in stderr
    assert "Traceback" not in stderr
    manifest = read_manifest(out / "manifest.json")
    assert {s.status for s in manifest.shapes} == {"pending"}
    hung = subprocess.run(["pgrep", "-f", str(out / ".work")], capture_output=True, text=True)
    assert hung.stdout.strip() == ""  # the fake ncu was stopped with its process group
    resumed = capture(fake_env, out, CaptureOptions(resume=True))
    assert [s.status for s in resumed.shapes] == ["ok"] * 3


def test_counter_permission_error_is_an_environment_problem(
    fake_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ncu prints ERR_NVGPUCTRPERM when the driver refuses counters to this user."""
    from ncu_classify import capture as module

    log = tmp_path / "x.ncu.log"
    log.write_text(
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access"
        " NVIDIA GPU Performance Counters on the target device 0.\n"
    )
    with pytest.raises(EnvironmentProblem, match=r"counters are not permitted .*ERR_NVGPUCTRPERM"):
        module._check_permissions(log)


def test_one_process_reaches_the_plan_from_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ncu_classify.cli import app

    args = [
        "capture",
        "--shapes",
        str(ROOT / "fixtures" / "shapes" / "smoke.yaml"),
        "-o",
        str(tmp_path / "raw"),
        "--dry-run",
    ]
    runner = CliRunner()
    per_stage = runner.invoke(app, args).stdout
    one = runner.invoke(app, [*args, "--one-process"]).stdout
    assert per_stage.count("# batch ") == 4 and "# batch all: 11 shapes" in one
