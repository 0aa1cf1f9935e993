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

from ncu_classify.capture import apply_status, capture, plan_batches, shape_record
from ncu_classify.errors import EnvironmentProblem
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
    batches = plan_batches(shapes)
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
    batch = plan_batches(shapes)[0]
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
    monkeypatch.delenv("FAKE_NCU_REPORT")
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
    manifest = capture(fake_env, tmp_path / "raw", timeout_s=2)
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
