"""Capture planning: ncu argv, batches, shards, the GPU split, memory checks, --dry-run.

Pure functions of the shapes file and the options; no process is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.capture.batch import plan_batches
from ncu_classify.capture.manifest import manifest_shape
from ncu_classify.capture.ncu_cmd import ncu_argv
from ncu_classify.capture.plan import CaptureOptions, on_host, plan_capture
from ncu_classify.capture.shards import input_units, select_shard, shard_costs, unit_cost
from ncu_classify.cli.entry import run
from ncu_classify.core.errors import ShapesError, UsageError
from ncu_classify.core.metrics import capture_metric_names
from ncu_classify.shapes.file import load_shapes

WORKLOAD = ROOT / "fixtures" / "shapes" / "workload_480x832_40heads.yaml"
SMOKE_SHAPES = ROOT / "fixtures" / "shapes" / "smoke.yaml"


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
    assert len(names) == len(set(names)) == 56  # 23 card metrics, 31 roofline, 2 breakdowns
    # the tensor pipe over elapsed cycles and the SMs' elapsed cycles cost no extra pass
    assert "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed" in names
    assert "sm__cycles_elapsed.avg" in names
    assert "gpu__time_duration.sum" in names and "sm__cycles_elapsed.avg.per_second" in names


def test_one_batch_per_stage_in_file_order() -> None:
    shapes = load_shapes(SMOKE_SHAPES)
    batches = plan_batches(shapes.entries())
    assert [(b.name, len(b.entries)) for b in batches] == [
        ("dit", 3),
        ("vae", 3),
        ("attention", 4),
        ("output", 1),
    ]
    record = manifest_shape(batches[1].entries[0])
    assert record.shape_parameters["output"] == [1, 384, 2, 120, 52]
    assert record.op == "aten.conv3d.default" and record.nominal_mac_flops == 99373547520


def test_hash_shards_of_older_captures_stay_pinned() -> None:
    """Captures made before cost_v1 (manifest shard_method `hash`) are resumed with their own
    shards: sha256 of the group id, mod N."""
    entries = load_shapes(WORKLOAD).entries()
    shards = [select_shard(entries, k, 4, "hash") for k in range(1, 5)]
    assert [(len(s), s[0].group) for s in shards] == [
        (8, "dit:linear:M4680_N5120_K144:bf16:bias"),
        (14, "dit:linear:M4680_N5120_K5120:bf16:bias"),
        (7, "vae:conv3d:in1x192x3x242x106_w192x192x3x3x3_s1x1x1_p0x0x0:fp32:tf32"),
        (5, "dit:linear:M1170_N15360_K5120:bf16:bias"),
    ]
    with pytest.raises(UsageError, match=r"--shard 5/4"):
        select_shard(entries, 5, 4)


def test_shards_partition_the_shapes_by_cost_deterministically() -> None:
    """Shards are pinned: a job array relies on a shape landing in the same shard on every
    host, release and file order; they balance capture's cost model, and the shapes that draw
    the same inputs (FA2/FA3 of one attention shape) share a shard."""
    entries = load_shapes(WORKLOAD).entries()
    shards = [select_shard(entries, k, 4) for k in range(1, 5)]
    groups = [e.group for shard in shards for e in shard]
    assert sorted(groups) == sorted(e.group for e in entries) and len(set(groups)) == 34
    assert [(len(s), s[0].group) for s in shards] == [
        (11, "dit:linear:M4680_N5120_K144:bf16:bias"),
        (5, "dit:linear:M3_N30720_K5120:bf16:bias"),
        (9, "dit:linear:M4680_N5120_K5120:bf16:bias"),
        (9, "dit:linear:M4680_N5120_K1536:bf16:bias"),
    ]
    reordered = list(reversed(entries))
    assert {e.group for e in select_shard(reordered, 2, 4)} == {e.group for e in shards[1]}
    for unit in input_units(entries):
        assert len({n for _, e in unit for n, s in enumerate(shards) if e in s}) == 1
    for count in (2, 4, 8):
        costs = shard_costs(entries, count, "cost_v1")
        biggest_unit = max(unit_cost(u) for u in input_units(entries))
        assert max(costs) <= max(1.1 * sum(costs) / count, biggest_unit) + 1e-9
    hashed = shard_costs(
        load_shapes(ROOT / "fixtures/shapes/workload_480x832.yaml").entries(), 8, "hash"
    )
    assert round(max(hashed) / (sum(hashed) / 8), 2) == 2.79  # the imbalance cost_v1 removes


def test_max_batch_splits_stages_and_names_stay_unique() -> None:
    entries = load_shapes(WORKLOAD).entries()
    batches = plan_batches(entries, max_batch=5)
    assert [b.name for b in batches][:5] == ["dit-1", "dit-2", "dit-3", "vae-1", "vae-2"]
    assert max(len(b.entries) for b in batches) == 5
    again = plan_batches(entries[:3], 0, frozenset({"dit"}))
    assert [b.name for b in again] == ["dit.r2"]


def test_dry_run_prints_the_command_lines(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ncu_classify.cli.entry import app

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


def test_one_process_for_all_stages_and_one_per_gpu() -> None:
    entries = load_shapes(WORKLOAD).entries()
    assert [b.name for b in plan_batches(entries, per_stage=False)] == ["all"]
    opts = CaptureOptions(per_stage=False, gpus=(0, 1))
    plan = plan_capture(WORKLOAD, Path("/nonexistent/raw"), opts)
    assert [(b.name, b.device) for b in plan.batches] == [("gpu0", 0), ("gpu1", 1)]
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


def test_one_process_reaches_the_plan_from_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ncu_classify.cli.entry import app

    args = [
        "capture",
        "--shapes",
        str(SMOKE_SHAPES),
        "-o",
        str(tmp_path / "raw"),
        "--dry-run",
    ]
    runner = CliRunner()
    per_stage = runner.invoke(app, args).stdout
    one = runner.invoke(app, [*args, "--one-process"]).stdout
    assert per_stage.count("# batch ") == 4 and "# batch all: 11 shapes" in one


def test_a_shape_too_large_for_the_gpu_is_refused_at_plan_time(tmp_path: Path) -> None:
    shapes = tmp_path / "s.yaml"
    shapes.write_text("stages:\n  dit:\n    - {op: linear, M: 1000000000, N: 5120, K: 5120}\n")
    with pytest.raises(ShapesError) as caught:
        plan_capture(shapes, tmp_path / "raw", CaptureOptions())
    # x (1e9 x 5120) + w (5120 x 5120) + out (1e9 x 5120), bf16
    need = (10**9 * 5120 + 5120 * 5120 + 10**9 * 5120) * 2
    assert str(caught.value) == (
        f"{shapes}: dit:linear:M1000000000_N5120_K5120:bf16: its tensors need"
        f" {need / 1e9:,.1f} GB ({need:,} bytes) of GPU memory, more than the"
        f" {300 * 2**30 / 1e9:,.1f} GB ({300 * 2**30:,} bytes) the GPU has"
    )
    # On a known GPU the bound is its memory: the workload's largest shape fits 141 GB.
    plan_capture(WORKLOAD, tmp_path / "raw", CaptureOptions(), gpu_bytes=143771 * 2**20)
    with pytest.raises(ShapesError, match=r"in1x96x6x482x210_w96x96x3x3x3.*need 0\.8 GB"):
        plan_capture(WORKLOAD, tmp_path / "raw", CaptureOptions(), gpu_bytes=7 * 10**8)


def test_device_bytes_count_inputs_outputs_and_layout_copies() -> None:
    entries = {e.group: e.shape for e in load_shapes(SMOKE_SHAPES).entries()}
    gemm = entries["dit:linear:M4680_N5120_K5120:bf16:bias"]
    assert gemm.device_bytes() == (4680 * 5120 + 5120 * 5120 + 5120 + 4680 * 5120) * 2
    ncdhw = entries["vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32"]
    cl3d = entries["vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:cl3d"]
    x, w, out = 384 * 4 * 122 * 54 * 4, 384 * 384 * 27 * 4, 384 * 2 * 120 * 52 * 4
    assert cl3d.device_bytes() == x + w + out
    assert ncdhw.device_bytes() == x + w + out + x + out  # NHWC copies of input and output


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-batch", "-1", "Invalid value for '--max-batch': -1: must be 1 or more"),
        ("--max-batch", "0", "Invalid value for '--max-batch': 0: must be 1 or more"),
        ("--timeout", "0", "Invalid value for '--timeout': 0.0: must be more than 0 seconds"),
        ("--timeout", "nan", "Invalid value for '--timeout': nan: must be more than 0 seconds"),
        ("--shard", "5/4", "Invalid value: '5/4': expected K/N with 1 <= K <= N, e.g. 2/8"),
        ("--shard", "0/4", "Invalid value: '0/4': expected K/N with 1 <= K <= N, e.g. 2/8"),
        (
            "--gpus",
            "0,0",
            "Invalid value: '0,0': expected distinct CUDA device indices such as 0,1",
        ),
        ("--gpus", "-1", "Invalid value: '-1': expected distinct CUDA device indices such as 0,1"),
        # an empty --gpus names no device (issue 37: --dry-run took it as not given)
        ("--gpus", "", "Invalid value: '': expected distinct CUDA device indices such as 0,1"),
        (
            "--gpus",
            " , ",
            "Invalid value: ' , ': expected distinct CUDA device indices such as 0,1",
        ),
    ],
)
def test_bad_capture_options_are_usage_errors(
    flag: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["capture", "--shapes", str(SMOKE_SHAPES), "-o", str(tmp_path / "raw"), "--dry-run"]
    assert run([*argv, flag, value]) == 2
    assert capsys.readouterr().err == f"ncu-classify: error: {message} (see --help)\n"
    assert not (tmp_path / "raw").exists()


def test_existing_capture_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "manifest.json").write_text("{}")
    with pytest.raises(UsageError, match=r"already holds a capture: pass --resume"):
        plan_capture(SMOKE_SHAPES, raw, CaptureOptions())
    assert run(["capture", "--shapes", str(SMOKE_SHAPES), "-o", str(raw), "--dry-run"]) == 2
    assert "already holds a capture" in capsys.readouterr().err
    assert (raw / "manifest.json").read_text() == "{}"


def test_the_plan_runs_on_the_host_as_it_was_made(tmp_path: Path) -> None:
    """The plan made before the host is probed is the one that runs: on the host it takes the
    ncu found and the GPU's memory, and a folder another capture wrote into since is refused
    (its plan would write over that capture's reports)."""
    out = tmp_path / "raw"
    plan = plan_capture(WORKLOAD, out, CaptureOptions())
    assert {argv[0] for argv in plan.argv.values()} == {"ncu"}
    hosted = on_host(plan, "/opt/nvidia/ncu", 143771 * 2**20)
    assert {argv[0] for argv in hosted.argv.values()} == {"/opt/nvidia/ncu"}
    assert hosted.batches == plan.batches and hosted.options.ncu == "/opt/nvidia/ncu"
    with pytest.raises(ShapesError, match=r"in1x96x6x482x210_w96x96x3x3x3.*need 0\.8 GB"):
        on_host(plan, "ncu", 7 * 10**8)
    out.mkdir()
    (out / ".capture.lock").write_text("1\n")  # what the capture's own lock adds: no change
    on_host(plan, "ncu", None)
    (out / "dit.ncu.log").write_text("")
    with pytest.raises(UsageError, match="another capture wrote into this folder"):
        on_host(plan, "ncu", None)
