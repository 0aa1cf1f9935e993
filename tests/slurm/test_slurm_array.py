"""The Slurm job array of docs/capture.md on a real one-node Slurm cluster
(tests/slurm/cluster.py), with the stand-in ncu serving real H200 reports of the 480x832
workload (fixtures/workload_h200_480x832) and the stand-in nvidia-smi listing both fake GPUs of
the node: a sharded capture, classify of the union (and of a union that lacks a shard), scancel
of a running task, --resume after a resubmission, scontrol requeue (twice), and the job script
form that would lose a shard refused; under proctrack/cgroup and proctrack/linuxproc. Skipped
where no cluster can start, unless NCU_CLASSIFY_REQUIRE_SLURM is set (CI), where that is a
failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster import Cluster, missing, slurm_cluster
from helpers import ROOT, CliRun, run_cli

from ncu_classify.capture.manifest import Manifest, read_manifest
from ncu_classify.capture.shards import select_shard
from ncu_classify.shapes.file import load_shapes

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]
SHAPES = ROOT / "fixtures" / "shapes" / "workload_480x832.yaml"
COMMITTED = ROOT / "fixtures" / "workload_h200_480x832"
FAKEBIN = ROOT / "tests" / "fakebin"
SHARDS = 4


def _kernels() -> dict[str, int]:
    manifest = json.loads((COMMITTED / "manifest.json").read_text())
    return {s["group"]: s["kernels"] for s in manifest["shapes"]}


@pytest.fixture(scope="module", params=["cgroup", "linuxproc"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    why = missing()
    if why:
        if os.environ.get("NCU_CLASSIFY_REQUIRE_SLURM"):
            pytest.fail(f"NCU_CLASSIFY_REQUIRE_SLURM is set but no Slurm cluster can start: {why}")
        pytest.skip(f"no Slurm cluster can start here: {why}")
    root = tmp_path_factory.mktemp(f"slurm-{request.param}")
    root.chmod(0o755)
    with slurm_cluster(root, request.param) as running:
        yield running


def _script(folder: Path, shard: str, form: str = "exec", extra: str = "") -> Path:
    """The job script of docs/capture.md for one shard (K/N, or the array task's) in `form`."""
    command = (
        f"{sys.executable} -m ncu_classify capture --shapes {SHAPES} -o {folder}"
        f" --shard {shard} --one-process --resume --ncu {FAKEBIN / 'ncu'} --stop-grace 10"
    )
    prefix = {"exec": "exec ", "srun": "srun ", "shell": ""}[form]
    path = folder.parent / f"{folder.name}.sh"
    path.write_text(
        f"#!/bin/bash\n#SBATCH --gpus=1\n#SBATCH --requeue\n#SBATCH --chdir={folder.parent}\n"
        f"#SBATCH -o {folder.parent}/{folder.name}-%A_%a.out\n{extra}{prefix}{command}\n"
        + ("echo capture exited $?\n" if form == "shell" else "")  # bash runs it as a child
    )
    return path


def _submit(cluster: Cluster, script: Path, *options: str, **env: str) -> str:
    base = {
        "PYTHONPATH": str(ROOT),
        "FAKE_NCU_REPORTS": str(COMMITTED),
        "FAKE_GPU_COUNT": "2",
        "FAKE_SHAPE_SECONDS": "0.05",
        "NCU_CLASSIFY_NVIDIA_SMI": str(FAKEBIN / "nvidia-smi"),
        **env,
    }
    done = subprocess.run(
        ["sbatch", "--parsable", *options, str(script)],
        env={**cluster.env, **base}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def _wait_gone(cluster: Cluster, job: str, seconds: float = 240) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not cluster.run("squeue", "-h", "-j", job, "-o", "%i").strip():
            return
        time.sleep(1)
    raise AssertionError(f"job {job} still queued after {seconds} s\n{cluster.logs()}")


def _wait_lines(folder: Path, count: int, seconds: float = 240, before: int = -1) -> int:
    """Wait until the target of a batch (not the one whose status file had inode `before`)
    has finished `count` shapes, as its status file says; that file's inode."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for status in (folder / ".work").glob("*.status.jsonl"):
            try:
                inode, text = status.stat().st_ino, status.read_text()
            except OSError:
                continue
            if inode != before and text.count('"status": "ok"') >= count:
                return inode
        time.sleep(0.2)
    raise AssertionError(f"{folder}: fewer than {count} shapes finished in {seconds} s")


def _left_running(folder: Path) -> str:
    found = subprocess.run(["pgrep", "-af", str(folder)], capture_output=True, text=True)
    return found.stdout.strip()


def _assert_kept(manifest: Manifest) -> list[str]:
    """Every shape ok with the committed capture's kernel count, or pending; the ok ones."""
    kernels = _kernels()
    for shape in manifest.shapes:
        assert shape.status in ("ok", "pending"), (shape.group, shape.status, shape.error)
        if shape.status == "ok":
            assert shape.kernels == kernels[shape.group], shape.group
    return [s.group for s in manifest.shapes if s.status == "ok"]


def _classify(*folders: Path, partial: bool = False) -> CliRun:
    out = folders[0].parent / "cards.json"
    return run_cli("classify", *folders, "-o", out, *(["--partial"] if partial else []))


def test_array_capture_and_classify_of_the_union(cluster: Cluster, tmp_path: Path) -> None:
    """The array: every shard non-empty and ok, their union every shape once, classify of all
    shards complete; without shard 2 it names the missing shard and exits 4."""
    folder = tmp_path / "raw"
    folder.mkdir()
    script = _script(folder / "shard$SLURM_ARRAY_TASK_ID", "$SLURM_ARRAY_TASK_ID/4")
    job = _submit(cluster, script, f"--array=1-{SHARDS}")
    _wait_gone(cluster, job)
    entries = load_shapes(SHAPES).entries()
    seen: list[str] = []
    for k in range(1, SHARDS + 1):
        manifest = read_manifest(folder / f"shard{k}" / "manifest.json")
        assert manifest.shard == f"{k}/4" and manifest.shard_method == "cost_v1"
        assert [s.group for s in manifest.shapes] == [e.group for e in select_shard(entries, k, 4)]
        assert _assert_kept(manifest) == [s.group for s in manifest.shapes]  # all ok
        assert manifest.host.cuda_visible_devices is None or manifest.host.gpus[0]["index"] == "0"
        seen += [s.group for s in manifest.shapes]
    assert sorted(seen) == sorted(e.group for e in entries)
    done = _classify(*sorted(p for p in folder.glob("shard*") if p.is_dir()))
    assert done.rc == 0, done.stderr
    cards = json.loads((folder / "cards.json").read_text())
    assert sorted(c["group"] for c in cards["cards"]) == sorted(seen)
    assert {c["group"]: len(c["kernels"]) for c in cards["cards"]} == _kernels()
    lacking = _classify(folder / "shard1", folder / "shard3", folder / "shard4")
    assert lacking.rc == 4
    assert "shard 2/4 of" in lacking.stderr and "--partial" in lacking.stderr
    assert _classify(folder / "shard1", partial=True).rc == 0


def test_scancel_keeps_the_finished_shapes_and_resume_finishes(
    cluster: Cluster, tmp_path: Path
) -> None:
    """scancel of a running task (`exec` form): the shapes finished are ok with their kernels,
    the rest pending, the batch interrupted, nothing left running; a resubmission with
    --resume captures only the rest."""
    folder = tmp_path / "shard1"
    script = _script(folder, "1/4")
    job = _submit(cluster, script, FAKE_SHAPE_SECONDS="1.5")
    _wait_lines(folder, 2)
    cluster.run("scancel", job)
    _wait_gone(cluster, job)
    time.sleep(1)
    assert _left_running(folder) == ""
    manifest = read_manifest(folder / "manifest.json")
    kept = _assert_kept(manifest)
    assert 2 <= len(kept) < len(manifest.shapes)
    assert [b.ended_by for b in manifest.batches] == ["interrupted"]
    report = manifest.batches[0].report
    again = _submit(cluster, script)
    _wait_gone(cluster, again)
    manifest = read_manifest(folder / "manifest.json")
    assert len(_assert_kept(manifest)) == len(manifest.shapes)
    assert [b.ended_by for b in manifest.batches] == ["interrupted", "finished"]
    assert {s.report for s in manifest.shapes if s.group in kept} == {report}
    assert set(manifest.batches[1].groups) == {s.group for s in manifest.shapes} - set(kept)


def test_requeue_then_finish(cluster: Cluster, tmp_path: Path) -> None:
    """scontrol requeue of a running task (twice under cgroup; Slurm holds a requeued job for the
    credential lifetime, AuthInfo's cred_expire: 120 s by default, 10 s on the test cluster):
    each run keeps what it finished, the requeued run resumes, the last one finishes every
    shape."""
    folder = tmp_path / "shard3"
    script = _script(folder, "3/4")
    job = _submit(cluster, script, FAKE_SHAPE_SECONDS="1.0")
    inode, times = -1, 2 if cluster.proctrack == "cgroup" else 1
    for _ in range(times):
        inode = _wait_lines(folder, 1, before=inode)
        cluster.run("scontrol", "requeue", job)
    _wait_gone(cluster, job, 300)
    manifest = read_manifest(folder / "manifest.json")
    assert len(_assert_kept(manifest)) == len(manifest.shapes)
    assert [b.ended_by for b in manifest.batches] == ["interrupted"] * times + ["finished"]
    assert len({s.report for s in manifest.shapes}) == times + 1  # each run kept its own
    assert _left_running(folder) == ""


def test_shell_form_is_refused(cluster: Cluster, tmp_path: Path) -> None:
    """A job script that runs capture under its shell (no exec, no srun) would lose the shard
    on scancel: capture refuses it before anything runs, saying what to write."""
    folder = tmp_path / "shard2"
    job = _submit(cluster, _script(folder, "2/4", form="shell"))
    _wait_gone(cluster, job)
    log = next(tmp_path.glob("shard2-*.out")).read_text()
    assert "start it with `exec ncu-classify capture ...`" in log
    assert "capture exited 2" in log and not (folder / "manifest.json").exists()
