"""The faults a Slurm array found (#22), shown without a cluster: ncu signalled from outside,
`--gpus` inside an allocation, a split capture with a shard missing; and the stand-in ncu serving
any subset of a committed real capture (tests/fakebin/report_subset.py). The same paths on a
real Slurm cluster: tests/slurm/test_slurm_array.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import CLI, ROOT, run_cli

from ncu_classify.capture.manifest import read_manifest
from ncu_classify.capture.plan import CaptureOptions
from ncu_classify.capture.run import capture
from ncu_classify.capture.shards import select_shard
from ncu_classify.core.errors import EnvironmentProblem
from ncu_classify.read.kernels import read_report
from ncu_classify.shapes.file import load_shapes
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

FAKEBIN = ROOT / "tests" / "fakebin"
SHAPES = ROOT / "fixtures" / "shapes" / "workload_480x832.yaml"
COMMITTED = ROOT / "fixtures" / "workload_h200_480x832"
sys.path.insert(0, str(FAKEBIN))
from report_subset import real_report  # noqa: E402


def _kernels() -> dict[str, int]:
    manifest = json.loads((COMMITTED / "manifest.json").read_text())
    return {s["group"]: s["kernels"] for s in manifest["shapes"]}


@pytest.fixture
def workload_env(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in ncu serving the committed 480x832 capture, the stand-in nvidia-smi through
    the probe's seam (not on PATH), no scheduler."""
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(COMMITTED))
    monkeypatch.setenv("NCU_CLASSIFY_NVIDIA_SMI", str(FAKEBIN / "nvidia-smi"))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG", "FAKE_GPU_COUNT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID", "SLURM_STEP_ID"):
        monkeypatch.delenv(name, raising=False)
    return SHAPES


def test_a_cut_report_reads_as_the_whole_one(tmp_path: Path) -> None:
    """The stand-in's report of a subset holds exactly those shapes' kernels, each row equal
    to the row read from the committed report (only the file differs)."""
    wanted = {g for g in _kernels() if "conv3d" in g or "flash_attn_v3" in g}
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(real_report([COMMITTED], wanted))
    rows = read_report(cut).kernels
    assert sorted({r.nvtx_ranges[-1] for r in rows}) == sorted(wanted)
    assert len(rows) == sum(_kernels()[g] for g in wanted)
    whole = [
        row
        for name in ("gpu0.ncu-rep.xz", "gpu1.ncu-rep.xz")
        for row in read_report(COMMITTED / name).kernels
        if row.nvtx_ranges[-1] in wanted
    ]
    place = {"report": "", "action_index": 0}  # where the row sits, not what it says
    assert [r.model_copy(update=place) for r in rows] == [r.model_copy(update=place) for r in whole]
    with pytest.raises(KeyError, match="no committed capture holds"):
        real_report([COMMITTED], {"dit:linear:M1_N1_K1:bf16"})


def test_any_shard_of_the_workload_captures_without_a_gpu(
    workload_env: Path, tmp_path: Path
) -> None:
    """A shard of a 34-shape workload (not the three DiT shapes alone): every shape ok with the
    committed capture's kernel count, and its cards classified from those real kernels."""
    out = tmp_path / "shard2"
    options = CaptureOptions(ncu=str(FAKEBIN / "ncu"), shard=(2, 4), per_stage=False)
    manifest = capture(workload_env, out, options)
    groups = [e.group for e in select_shard(load_shapes(SHAPES).entries(), 2, 4)]
    assert [s.group for s in manifest.shapes] == groups and len(groups) > 3
    assert {s.group: s.kernels for s in manifest.shapes} == {g: _kernels()[g] for g in groups}
    assert manifest.host.gpus[0]["name"] == "NVIDIA H200"
    cards = classify([out], load_rules(), jobs=1).cards
    assert [(c.group, len(c.kernels), c.error) for c in cards] == [
        (g, _kernels()[g], None) for g in groups
    ]
    assert "failed" not in {c.status for c in cards}


def _capture_cli(out: Path, seconds: str, **job: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FAKE_SHAPE_SECONDS": seconds, "PYTHONPATH": str(ROOT), **job}
    argv = [*CLI, "capture", "--shapes", str(SHAPES), "-o", str(out), "--shard", "1/4"]
    argv += ["--one-process", "--ncu", str(FAKEBIN / "ncu")]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_ok(status: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if status.exists() and status.read_text().count('"status": "ok"') >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{status}: fewer than {count} shapes ok after 120 s")


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


@pytest.mark.parametrize("whom", ["ncu", "every process", "every process of a job"])
def test_ncu_signalled_from_outside_is_an_interrupt(
    whom: str, workload_env: Path, tmp_path: Path
) -> None:
    """SIGTERM to ncu alone (a `kill`), or to every process of the capture (proctrack/
    linuxproc; in a job, where ncu shares capture's process group): ncu ends its target and
    writes the report of what it finished; those shapes stay ok with their kernels, the rest
    pending (none failed), the batch says interrupted, capture exits 130 and nothing is left
    running."""
    out = tmp_path / "raw"
    job = {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"} if whom.endswith("job") else {}
    proc = _capture_cli(out, "1.0", **job)
    _wait_ok(out / ".work" / "all.status.jsonl", 2)
    ncu = [p for p in _pids(f"fakebin/fake_ncu.py .*{out}")]
    everyone = whom.startswith("every process")
    targets = [proc.pid] if everyone else []
    targets += ncu + (_pids(f"fake_target.py .*{out}") if everyone else [])
    for pid in targets:
        # a process may end before its turn: capture passes the signal on to ncu, ncu to its
        # target (a job's kill signals them all at once, in no order)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    manifest = read_manifest(out / "manifest.json")
    ok = [s for s in manifest.shapes if s.status == "ok"]
    assert len(ok) >= 2 and {s.status for s in manifest.shapes} == {"ok", "pending"}
    assert all(s.kernels == _kernels()[s.group] and s.error is None for s in ok)
    (batch,) = manifest.batches
    assert batch.ended_by == "interrupted" and batch.report == "all.ncu-rep"
    assert batch.exit_code == -signal.SIGTERM
    assert _pids(str(out)) == []


def test_gpus_count_within_the_allocation(
    workload_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a job given GPU 1 of a 2-GPU node (CUDA_VISIBLE_DEVICES=1, nvidia-smi lists
    both): `--gpus 0` runs ncu on GPU 1, the manifest lists the job's GPU alone, and `--gpus 1`
    is out of range."""
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    options = CaptureOptions(ncu=str(FAKEBIN / "ncu"), shard=(4, 4), per_stage=False, gpus=(0,))
    manifest = capture(workload_env, tmp_path / "raw", options)
    assert [json.loads(line)["device"] for line in log.read_text().splitlines()] == ["1"]
    assert [(g["index"], g["node_index"]) for g in manifest.host.gpus] == [("0", "1")]
    assert manifest.host.gpus[0]["uuid"].endswith("001")
    with pytest.raises(EnvironmentProblem, match=r"GPU index 1 is out of range: this allocation"):
        capture(workload_env, tmp_path / "other", replace(options, gpus=(1,)))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-00000000-0000-0000-0000-000000000000")
    assert capture(workload_env, tmp_path / "uuid", options).host.gpus[0]["node_index"] == "0"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    with pytest.raises(
        EnvironmentProblem, match="CUDA_VISIBLE_DEVICES=7: nvidia-smi lists no GPU 7"
    ):
        capture(workload_env, tmp_path / "seven", options)


def test_classify_names_a_missing_shard(workload_env: Path, tmp_path: Path) -> None:
    """Shards 1 and 3 of 4 alone: an error line names shards 2/4 and 4/4 (exit 4), the cards of
    the given shards are still written; --partial makes it a warning (exit 0). A shard of
    another shapes file given with them is a set of its own."""
    options = CaptureOptions(ncu=str(FAKEBIN / "ncu"), per_stage=False)
    for k in (1, 3):
        capture(
            workload_env,
            tmp_path / f"shard{k}",
            replace(options, shard=(k, 4)),
        )
    rules = load_rules()
    cards = classify([tmp_path / "shard1", tmp_path / "shard3"], rules, jobs=1)
    (line,) = cards.input_errors  # the folders and the shapes file named from any folder
    assert line.startswith(f"shard1, shard3: shards 2/4, 4/4 of {SHAPES.name} (sha256")
    assert line.endswith(
        "not given: the cards lack their shapes; give every shard's folder, or pass --partial"
        " to accept the cards of these alone"
    )
    assert len(cards.cards) == 10 + 8
    partial = classify([tmp_path / "shard1", tmp_path / "shard3"], rules, jobs=1, partial=True)
    # with --partial the warning says what was accepted, not to pass --partial (issue 37)
    assert partial.input_errors == [] and partial.input_warnings == [
        line.split("; give")[0] + " (accepted: --partial)"
    ]
    stray = tmp_path / "stray"  # shard 3 of another shapes file (its manifest says so)
    shutil.copytree(tmp_path / "shard3", stray)
    doc = json.loads((stray / "manifest.json").read_text())
    doc["shapes_sha256"], doc["shapes_file"] = "f" * 64, "other.yaml"
    (stray / "manifest.json").write_text(json.dumps(doc))
    mixed = classify([tmp_path / "shard1", stray], rules, jobs=1).input_errors
    assert [line.split(": ", 1)[1][:40] for line in mixed] == [
        f"shards 2/4, 3/4, 4/4 of {SHAPES.name}"[:40],
        "shards 1/4, 2/4, 4/4 of other.yaml (sha2",
    ]
    out = tmp_path / "cards.json"
    done = run_cli("classify", tmp_path / "shard1", "-o", out)
    assert done.rc == 4 and "shards 2/4, 3/4, 4/4 of" in done.stderr and out.exists()


def test_resume_keeps_the_shard_method_of_an_older_capture(
    workload_env: Path, tmp_path: Path
) -> None:
    """A capture made before cost_v1 (no shard_method in its manifest: hash shards) is resumed
    with its own shards, so no shape it holds is dropped and none of another shard is added."""
    out = tmp_path / "shard2"
    options = CaptureOptions(ncu=str(FAKEBIN / "ncu"), shard=(2, 4), per_stage=False)
    capture(workload_env, out, replace(options, shard_method="hash"))
    doc = json.loads((out / "manifest.json").read_text())
    del doc["shard_method"]
    for shape in doc["shapes"][1:]:
        shape.update(status="pending", report=None, kernels=None)
    (out / "manifest.json").write_text(json.dumps(doc))
    resumed = capture(workload_env, out, replace(options, resume=True))
    hashed = [e.group for e in select_shard(load_shapes(SHAPES).entries(), 2, 4, "hash")]
    assert hashed != [e.group for e in select_shard(load_shapes(SHAPES).entries(), 2, 4)]
    assert [s.group for s in resumed.shapes] == hashed and resumed.shard_method == "hash"
    assert {s.status for s in resumed.shapes} == {"ok"}
    assert resumed.batches[-1].groups == hashed[1:]


def test_inside_a_job_ncu_stays_in_the_job_s_process_group(
    workload_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a job ncu leads a process group of its own (a Ctrl-C reaches capture alone);
    inside a Slurm job (an srun step here) it stays in capture's, which proctrack/pgid signals."""
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    options = CaptureOptions(ncu=str(FAKEBIN / "ncu"), shard=(4, 4), per_stage=False)
    capture(workload_env, tmp_path / "alone", options)
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    manifest = capture(workload_env, tmp_path / "job", options)
    outside, inside = [json.loads(line) for line in log.read_text().splitlines()]
    assert outside["pgid"] == outside["pid"] and inside["pgid"] == os.getpgid(0)
    assert {s.status for s in manifest.shapes} == {"ok"}
    assert _pids(str(tmp_path)) == []
