"""A careless and a hostile user against what record writes since every device op became an
`aten` shape: broken aten shapes and recording totals in shapes files (capture --dry-run and
capture with the stand-in ncu), odd `-o` and odd programs for `record`, the coverage and
fidelity views of the real Wan 2.1 14B H200 recording (fixtures/record_h200_wan14b), and cards
whose coverage was edited by hand.

Tests marked xfail(strict=True) document a defect found by that run: each turns green (and then
fails as XPASS, so that its marker is removed) when the defect is fixed."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import CLI, ROOT, run_cli, terminal_signals

from ncu_classify.cli.entry import run
from ncu_classify.replay.protocol import BatchFile, read_batch, write_batch
from ncu_classify.shapes.file import load_shapes

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

FAKEBIN = ROOT / "tests" / "fakebin"
RECORDING = ROOT / "fixtures" / "record_h200_wan14b"
WITHOUT_COVERAGE = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
H200_BYTES = 143771 * 2**20  # what the stand-in nvidia-smi says the GPU has


# --- helpers ---------------------------------------------------------------------------------


def tensor(shape: list, strides: list, dtype: str = "float32", offset: int = 0) -> dict:
    return {"tensor": {"shape": shape, "dtype": dtype, "strides": strides, "offset": offset}}


def aten(**fields: object) -> dict:
    """A valid aten shape (x * 2 on a 4x4 fp32 tensor), with `fields` replaced."""
    shape: dict = {"op": "aten", "overload": "aten.mul.Tensor"}
    shape["args"] = [tensor([4, 4], [4, 1]), 2.0]
    return {**shape, **fields}


def recorded(**totals: object) -> dict:
    """A `recorded` block with `totals`."""
    return {"command": "python x.py", "tool_version": "0.1.0", "torch": "2.11", "device": "cuda",
            "totals": totals}  # fmt: skip


def shapes_doc(shape: dict, record: dict | None = None) -> dict:
    doc: dict = {"seed": 0, "stages": {"dit": [shape]}}
    if record is not None:
        doc["recorded"] = record
    return doc


def one_error(stderr: str) -> str:
    """The single `ncu-classify: error:` line stderr holds (no traceback, nothing else)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("ncu-classify: error: "), stderr
    return lines[0]


def fake_env() -> dict:
    """The environment of a GPU host as the tests fake it: the stand-in nvidia-smi (one H200)
    and ncu first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{FAKEBIN}{os.pathsep}{env['PATH']}"
    env["FAKE_NCU_REPORTS"] = str(ROOT / "fixtures" / "fault_h200")
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG", "NCU_CLASSIFY_DEBUG"):
        env.pop(name, None)
    return env


def no_gpu_env(tmp_path: Path) -> dict:
    """A host without a GPU: no nvidia-smi on PATH (the dry run then checks against the largest
    GPU made)."""
    env = dict(os.environ)
    env.pop("NCU_CLASSIFY_DEBUG", None)
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if p and not (Path(p) / "nvidia-smi").exists()
    )
    return env


def dry_run(shapes: Path, tmp_path: Path, env: dict | None = None) -> tuple[int, str, str]:
    return run_cli("capture", "--dry-run", "--shapes", str(shapes), "-o", str(tmp_path / "raw"),
               env=env if env is not None else no_gpu_env(tmp_path))  # fmt: skip


def write_shapes(tmp_path: Path, doc: dict | str, name: str = "shapes.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


# --- broken aten shapes and totals: refused with one line, file:line:col, exit 3 ----------------

REFUSED = {
    "malformed overload": (aten(overload="aten.mul"), "stages.dit.0.overload: String should match"),
    "negative stride": (aten(args=[tensor([4, 4], [-4, 1])]), "greater than or equal to 0"),
    "negative extent": (aten(args=[tensor([-4, 4], [4, 1])]), "greater than or equal to 0"),
    "extent of 2^40": (aten(args=[tensor([2**40], [1])]), "less than 1099511627776"),
    "stride of 2^40": (aten(args=[tensor([4, 4], [2**40, 1])]), "less than 1099511627776"),
    "rank mismatch": (aten(args=[tensor([4, 4], [1])]), "shape [4, 4] and strides [1] differ"),
    "unknown dtype": (aten(args=[tensor([4], [1], "float128")]), "'float64', 'float32'"),
    "a float extent": (aten(args=[tensor([4.0, 4], [4, 1])]), "valid integer"),
    "a boolean extent": (aten(args=[tensor([True, 4], [4, 1])]), "valid integer"),
    "tensor not a mapping": (aten(args=[{"tensor": [4, 4]}]), "valid dictionary"),
    "outputs a string": (aten(outputs="x"), "stages.dit.0.outputs: Input should be a valid list"),
    "outputs a mapping": (aten(outputs={"shape": [4]}), "stages.dit.0.outputs: Input should be"),
    "outputs of numbers": (aten(outputs=[1, 2]), "stages.dit.0.outputs.0: Input should be"),
    "args a mapping": (aten(args={"a": 1}), "stages.dit.0.args: Input should be a valid list"),
    "kwargs a list": (aten(kwargs=[1]), "stages.dit.0.kwargs: Input should be a valid dict"),
    "real_us -1": (aten(real_us=-1), "stages.dit.0.real_us: Input should be greater than or"),
    "real_kernels -1": (aten(real_kernels=-1), "stages.dit.0.real_kernels: Input should be"),
    "calls 0": (aten(calls=0), "stages.dit.0.calls: Input should be greater than 0"),
    "a name with spaces": (aten(name="a name"), "stages.dit.0.name: String should match"),
    "nested 40 deep": (aten(args=[json.loads("[" * 40 + "1" + "]" * 40)]), "deeper than 32"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_broken_aten_shape_is_one_line_with_its_place(case: str, tmp_path: Path) -> None:
    shape, what = REFUSED[case]
    path = write_shapes(tmp_path, shapes_doc(shape))
    code, out, err = dry_run(path, tmp_path)
    line = one_error(err)
    assert code == 3, (out, err)
    assert line.startswith(f"ncu-classify: error: {path}:1:"), line
    assert what in line, line
    assert not (tmp_path / "raw").exists()


YAML_REFUSED = {
    "real_us .nan": ("real_us: .nan", "stages.dit.0.real_us: Input should be a finite number"),
    "real_us .inf": ("real_us: .inf", "stages.dit.0.real_us: Input should be a finite number"),
}


@pytest.mark.parametrize("case", list(YAML_REFUSED))
def test_a_non_finite_program_time_is_refused(case: str, tmp_path: Path) -> None:
    field, what = YAML_REFUSED[case]
    text = (
        "stages:\n  dit:\n    - {op: aten, overload: aten.mul.Tensor, args: [{tensor: {shape: [4],"
        " dtype: float32, strides: [1]}}, 2.0], " + field + "}\n"
    )
    path = write_shapes(tmp_path, text)
    code, _, err = dry_run(path, tmp_path)
    assert code == 3
    assert one_error(err).startswith(f"ncu-classify: error: {path}:3:")
    assert what in err


TOTALS_REFUSED = {
    "totals a string": (recorded() | {"totals": "lots"}, "recorded.totals: Input should be"),
    "totals without stages": (recorded(basis="kernel_time"), "recorded.totals.stages: Field"),
    "negative calls": (
        recorded(basis="kernel_time", stages={"dit": {"calls": -3}}),
        "recorded.totals.stages.dit.calls: Input should be greater than or equal to 0",
    ),
    "an unknown basis": (
        recorded(basis="wall", stages={"dit": {"calls": 3}}),
        "recorded.totals.basis: Input should be 'kernel_time' or 'calls'",
    ),
    "an uncovered item without a name": (
        recorded(basis="calls", stages={"dit": {"calls": 3}}, uncovered=[{"stage": "dit"}]),
        "recorded.totals.uncovered.0.name: Field required",
    ),
    "an old recorded.ops entry with calls 0": (
        recorded()
        | {
            "totals": None,
            "ops": [
                {"id": "dit:x", "stage": "dit", "op": "aten.mul.Tensor", "args": [], "calls": 0}
            ],
        },
        "recorded.ops.0.calls: Input should be greater than 0",
    ),
}


@pytest.mark.parametrize("case", list(TOTALS_REFUSED))
def test_broken_recording_totals_are_one_line_with_their_place(case: str, tmp_path: Path) -> None:
    record, what = TOTALS_REFUSED[case]
    path = write_shapes(tmp_path, shapes_doc(aten(), record))
    code, _, err = dry_run(path, tmp_path)
    line = one_error(err)
    assert code == 3
    assert line.startswith(f"ncu-classify: error: {path}:1:"), line
    assert what in line, line


def test_bounded_reading_of_shapes_files(tmp_path: Path) -> None:
    """An alias bomb, non-UTF-8 bytes and a file over 2 MiB: one line each, exit 3."""
    bomb = write_shapes(tmp_path, "a: &a [x, x, x, x]\nb: [*a, *a, *a, *a]\nstages: {}\n", "b.yaml")
    code, _, err = dry_run(bomb, tmp_path)
    assert (code, one_error(err)) == (3, f"ncu-classify: error: {bomb}:2:5: YAML aliases (*a)"
                                         " are not allowed here; write the value out")  # fmt: skip
    raw = tmp_path / "u.yaml"
    raw.write_bytes(b'stages:\n  dit:\n    - {op: aten, overload: aten.mul.Tensor, name: "\xff"}\n')
    code, _, err = dry_run(raw, tmp_path)
    assert code == 3
    assert one_error(err).startswith(f"ncu-classify: error: {raw}:3:")
    assert "not UTF-8" in err
    big = write_shapes(tmp_path, "# " + "x" * (2 * 2**20) + "\n" + json.dumps(shapes_doc(aten())))
    code, _, err = dry_run(big, tmp_path)
    assert (code, one_error(err)) == (
        3, f"ncu-classify: error: {big}: larger than 2 MiB; not a file this tool reads"
    )  # fmt: skip


# --- too large for the GPU ----------------------------------------------------------------------

# 25 Gi fp32 elements: 214.7 GB with the copy an in-place op needs; more than an H200 has,
# less than the largest GPU made.
MID_BIG = aten(args=[tensor([25 * 2**30], [1]), 2.0])


def test_capture_refuses_an_aten_shape_too_large_for_the_gpu(tmp_path: Path) -> None:
    path = write_shapes(tmp_path, shapes_doc(MID_BIG))
    out = tmp_path / "raw"
    code, _, err = run_cli("capture", "--shapes", str(path), "-o", str(out), env=fake_env())
    assert code == 3
    line = one_error(err)
    assert "its tensors need 214.7 GB (214,748,364,800 bytes) of GPU memory" in line
    assert f"more than the 150.8 GB ({H200_BYTES:,} bytes) the GPU has" in line
    assert not (out / "manifest.json").exists()


def test_dry_run_without_a_gpu_refuses_what_no_gpu_holds(tmp_path: Path) -> None:
    huge = aten(args=[tensor([2**38], [1]), 2.0])
    code, _, err = dry_run(write_shapes(tmp_path, shapes_doc(huge)), tmp_path)
    assert code == 3
    assert "its tensors need 2,199.0 GB (2,199,023,255,552 bytes) of GPU memory" in one_error(err)


def test_dry_run_on_a_gpu_host_refuses_what_capture_refuses(tmp_path: Path) -> None:
    path = write_shapes(tmp_path, shapes_doc(MID_BIG))
    code, _, err = dry_run(path, tmp_path, env=fake_env())
    assert code == 3, err
    assert "more than the 150.8 GB" in one_error(err)


# --- defects in reading aten shapes ---------------------------------------------------------------


@pytest.mark.parametrize(
    "arg", [tensor([4, 4], [-4, 1]), tensor([4, 4], [1]), tensor([4], [1], "float128")]
)
def test_a_bad_tensor_argument_is_named_by_its_field_path(arg: dict, tmp_path: Path) -> None:
    path = write_shapes(tmp_path, shapes_doc(aten(args=[tensor([2], [1]), arg])))
    code, _, err = dry_run(path, tmp_path)
    assert code == 3
    assert "args.1" in one_error(err)  # the second argument, whatever the spelling of the path


@pytest.mark.parametrize(
    "entry",
    [
        {"op": "aten.mul", "args": []},
        {"op": "aten.mul.Tensor", "args": [tensor([4], [1, 1])]},
        {"op": "aten.mul.Tensor", "args": [], "id": "dit:has space"},
    ],
)
def test_a_bad_old_recorded_op_is_named_by_line_and_field(entry: dict, tmp_path: Path) -> None:
    op = {"id": "dit:aten.mul.Tensor", "stage": "dit", "calls": 1, **entry}
    record = recorded() | {"totals": None, "ops": [op]}
    path = write_shapes(tmp_path, shapes_doc({"op": "linear", "M": 4, "N": 4, "K": 4}, record))
    code, _, err = dry_run(path, tmp_path)
    line = one_error(err)
    assert code == 3
    assert "(top level)" not in line
    assert line.startswith(f"ncu-classify: error: {path}:1:"), line
    assert "recorded.ops.0" in line


@pytest.mark.parametrize("arg", [{"weird": 1}, {"float": "banana"}])
def test_an_argument_of_unknown_form_is_refused_when_read(arg: dict, tmp_path: Path) -> None:
    path = write_shapes(tmp_path, shapes_doc(aten(args=[tensor([4], [1]), arg])))
    code, _, err = dry_run(path, tmp_path)
    assert code == 3
    assert one_error(err).startswith(f"ncu-classify: error: {path}:1:")


NON_FINITE = (
    "stages:\n  dit:\n    - {op: aten, name: fill, overload: aten.masked_fill.Scalar, args:"
    " [{tensor: {shape: [1024], dtype: float32, strides: [1]}}, {tensor: {shape: [1024], dtype:"
    " bool, strides: [1]}}, -.inf]}\n"
)


def test_a_non_finite_argument_reaches_the_replay_as_written(tmp_path: Path) -> None:
    from ncu_classify.core.errors import ShapesError

    path = write_shapes(tmp_path, NON_FINITE)
    try:
        entries = load_shapes(path).entries()
    except ShapesError:
        return  # refused when read: fine
    batch = tmp_path / "batch.json"
    write_batch(batch, BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=entries))
    value = read_batch(batch).entries[0].shape.args[2]  # type: ignore[union-attr]
    assert value == {"float": "-inf"} or (isinstance(value, float) and math.isinf(value)), value


@pytest.mark.needs("torch")
def test_what_the_replay_cannot_build_fails_with_its_reason_on_cpu(tmp_path: Path) -> None:
    """An unknown overload fails as NotReplayable, with the reason (capture records it and
    exits 5); an fp8 tensor is drawn (the shapes file's dtypes are all drawn); a zero-size
    tensor replays."""
    from ncu_classify.replay.aten import NotReplayable, Storages, prepare

    shapes = [
        aten(name="unknown", overload="aten.frobnicate.default"),
        aten(name="f8", args=[tensor([4], [1], "float8_e4m3fn"), 2.0]),
        aten(name="empty", args=[tensor([0, 4], [4, 1]), 2.0]),
    ]
    doc = {"stages": {"ops": shapes}}
    entries = load_shapes(write_shapes(tmp_path, doc)).entries()
    with pytest.raises(NotReplayable, match=r"aten\.frobnicate\.default: no such op overload"):
        prepare(entries[0].shape, 0, "cpu", Storages())  # type: ignore[arg-type]
    cast = entries[1].shape.model_copy(update={"overload": "aten._to_copy.default",
                                               "args": entries[1].shape.args[:1]})  # fmt: skip
    assert prepare(cast, 0, "cpu", Storages()).run().shape == (4,)  # type: ignore[arg-type]
    assert tuple(prepare(entries[2].shape, 0, "cpu", Storages()).run().shape) == (0, 4)  # type: ignore[arg-type]


# --- record -------------------------------------------------------------------------------------

PROGRAM = (
    "import torch\n"
    "m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))\n"
    "with torch.no_grad():\n"
    "    y = m(torch.randn(4, 16))\n"
    "    z = (y * 2 + 1).sum()\n"
)


def program(tmp_path: Path, text: str = PROGRAM, name: str = "infer.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.needs("torch")
@pytest.mark.parametrize(
    ("target", "what"),
    [
        ("folder", "is a folder"),
        ("-", "-o -: the program prints to standard output too; give a file"),
        ("script", "is also an input"),
        ("link to script", "is also an input"),
        ("hard link to script", "is also an input"),
    ],
)
def test_record_refuses_an_output_that_would_lose_data(
    target: str, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = program(tmp_path)
    out = {"folder": str(tmp_path), "-": "-", "script": str(script)}.get(target)
    if target == "link to script":
        (tmp_path / "shapes.yaml").symlink_to(script)
        out = str(tmp_path / "shapes.yaml")
    if target == "hard link to script":
        os.link(script, tmp_path / "shapes.yaml")
        out = str(tmp_path / "shapes.yaml")
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 2
    assert what in one_error(capsys.readouterr().err)
    assert script.read_text() == PROGRAM


@pytest.mark.needs("torch")
def test_record_into_a_full_device_is_exit_7(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    assert run(["record", "-o", "/dev/full", "--", "python", str(program(tmp_path))]) == 7
    assert one_error(capsys.readouterr().err) == (
        "ncu-classify: error: /dev/full: cannot write: No space left on device"
    )


@pytest.mark.needs("torch")
def test_record_output_folder_hint_offers_only_what_record_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["record", "-o", str(tmp_path), "--", "python", str(program(tmp_path))]) == 2
    assert "- for standard output" not in one_error(capsys.readouterr().err)


@pytest.mark.needs("torch")
def test_record_cpu_program_counts_calls_and_no_kernel_time_changes_nothing_on_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = program(tmp_path)
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert run(["record", "-o", str(first), "--", "python", str(script)]) == 0
    assert run(["record", "--no-kernel-time", "-o", str(second), "--", "python", str(script)]) == 0
    capsys.readouterr()
    for path in (first, second):
        totals = load_shapes(path).recorded.totals  # type: ignore[union-attr]
        assert totals is not None and totals.basis == "calls"
        assert totals.setup_kernel_us is None
    shapes = load_shapes(first)
    ops = [e.shape.overload for e in shapes.entries() if e.shape.op == "aten"]  # type: ignore[union-attr]
    assert "aten.gelu.default" in ops and "aten.sum.default" in ops
    assert all(e.shape.real_us is None for e in shapes.entries())
    assert first.read_text().split("\nstages:\n")[1] == second.read_text().split("\nstages:\n")[1]


@pytest.mark.needs("torch")
def test_record_keeps_what_ran_before_the_program_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = program(tmp_path, PROGRAM + "    raise RuntimeError('boom after ops')\n")
    out = tmp_path / "shapes.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 5
    line = one_error(capsys.readouterr().err)
    assert "infer.py raised RuntimeError: boom after ops; the 7 shapes recorded before it" in line
    assert len(load_shapes(out).entries()) == 7


@pytest.mark.needs("torch")
def test_a_boolean_mask_and_nonzero_are_uncovered_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "import torch\nm = torch.nn.Linear(16, 16)\nwith torch.no_grad():\n"
        "    x = m(torch.randn(8, 16))\n    y = x[x > 0]\n    i = torch.nonzero(x > 0.5)\n"
    )
    out = tmp_path / "shapes.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(program(tmp_path, text))]) == 0
    capsys.readouterr()
    totals = load_shapes(out).recorded.totals  # type: ignore[union-attr]
    assert totals is not None
    why = {u.name.split(":")[0]: u.why for u in totals.uncovered}
    assert why == {
        "aten.index.Tensor": "a boolean-mask index: the work depends on how many values are true",
        "aten.nonzero.default": "its output size depends on the values of its inputs",
    }
    listed = [e.shape.overload for e in load_shapes(out).entries() if e.shape.op == "aten"]  # type: ignore[union-attr]
    assert "aten.nonzero.default" not in listed and "aten.index.Tensor" not in listed


LONG = (
    "import sys, time, torch\n"
    "torch.nn.functional.linear(torch.randn(4, 8), torch.randn(2, 8))\n"
    "sys.stderr.write('ready\\n'); sys.stderr.flush()\n"
    "time.sleep(120)\n"
)


@pytest.mark.needs("torch")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_record_is_130_one_line_and_writes_nothing(
    sig: signal.Signals, tmp_path: Path
) -> None:
    script = program(tmp_path, LONG)
    out = tmp_path / "shapes.yaml"
    before = sorted(p.name for p in tmp_path.iterdir())
    child = subprocess.Popen(
        [*CLI, "record", "-o", str(out), "--", "python", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=terminal_signals,
    )  # fmt: skip
    assert child.stderr is not None
    seen, start = "", time.monotonic()
    while "ready" not in seen and time.monotonic() - start < 120:
        line = child.stderr.readline()
        if not line:
            break
        seen += line
    child.send_signal(sig)
    try:
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130
    assert err.strip() == "ncu-classify: interrupted"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_record_summary_line_says_how_small_a_stage_is() -> None:
    from ncu_classify.cli.record import recorded_line

    doc = _document({"basis": "calls", "stages": {"m": {"calls": 3}}, "uncovered": []})
    assert recorded_line(doc, "x.yaml").endswith("m 3 calls, 0.0 % not covered")


def test_record_summary_line_does_not_round_kernel_time_to_zero() -> None:
    from ncu_classify.cli.record import recorded_line

    totals = {"basis": "kernel_time", "stages": {"m": {"calls": 3, "kernel_us": 19.137}},
              "uncovered": []}  # fmt: skip
    line = recorded_line(_document(totals), "x.yaml")
    assert "0.0 ms" not in line, line


def _document(totals: dict[str, object]):  # type: ignore[no-untyped-def]
    """A recorded document of one linear shape (3 calls) in stage m, with these totals."""
    from ncu_classify.record.shapes_document import ShapesDocument
    from ncu_classify.shapes.ops import LinearShape
    from ncu_classify.shapes.recorded import Recorded

    recorded = {"command": "c", "tool_version": "v", "torch": "t", "device": "cpu"}
    return ShapesDocument(
        recorded=Recorded.model_validate({**recorded, "totals": totals}),
        stages={"m": [LinearShape(op="linear", M=1, N=1, K=1, calls=3)]},
    )


GPU_PROFILING = (
    "import torch\n"
    "from torch.profiler import profile, ProfilerActivity\n"
    "m = torch.nn.Linear(256, 256).cuda()\n"
    "with torch.no_grad():\n"
    "    y = m(torch.randn(64, 256, device='cuda')).relu()\n"
    "    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:\n"
    "        y = m(y).relu() * 3\n"
    "    y = m(y).sigmoid()\n"
    "torch.cuda.synchronize()\n"
    "print(len(prof.key_averages()))\n"
)


@pytest.mark.gpu
def test_record_of_a_program_that_profiles_itself(tmp_path: Path) -> None:
    out = tmp_path / "shapes.yaml"
    script = program(tmp_path, GPU_PROFILING)
    code, _, err = run_cli("record", "-o", str(out), "--", "python", str(script))
    if code == 0:  # both profilers ran: the recording is whole and timed
        shapes = load_shapes(out)
        assert sum(1 for e in shapes.entries() if e.shape.op == "aten") >= 3
        assert all(e.shape.real_us for e in shapes.entries())
        return
    assert "--no-kernel-time" in one_error(err)  # refused, saying what to do
    assert "real_us: 0.0" not in (out.read_text() if out.exists() else "")


@pytest.mark.gpu
def test_record_on_a_gpu_prints_no_warning_of_its_own(tmp_path: Path) -> None:
    text = "import torch\ntorch.nn.functional.relu(torch.randn(64, device='cuda'))\n"
    code, _, err = run_cli("record", "-o", str(tmp_path / "s.yaml"), "--", "python",
                       str(program(tmp_path, text)))  # fmt: skip
    assert code == 0
    assert "UserWarning" not in err, err


# --- the 14B recording: classify, summaries, report, diff ---------------------------------------


@pytest.fixture(scope="module")
def wan14(wan_file: Path) -> Path:
    """The recording's cards (`RECORDING`, classified once a session by tests/conftest.py)."""
    return wan_file


@pytest.mark.parametrize("view", ["coverage", "fidelity"])
def test_summary_views_onto_odd_outputs(
    view: str, wan14: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["summary", str(wan14), "--by", view]

    def in_process(*argv: str) -> tuple[int, str, str]:
        code = run(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    code, _, err = in_process(*base, "-o", "/dev/null")
    assert (code, "error" in err) == (0, False)
    if Path("/dev/full").exists():
        code, _, err = in_process(*base, "-o", "/dev/full")
        assert (code, one_error(err)) == (
            7, "ncu-classify: error: /dev/full: cannot write: No space left on device"
        )  # fmt: skip
    code, _, err = in_process(*base, "-o", str(wan14))
    assert code == 2 and "is also an input" in one_error(err)
    code, _, err = in_process(*base, "-o", str(tmp_path / "x.html"))
    assert code == 2 and ".html is not a format this command writes" in one_error(err)
    code, _, err = in_process(*base, "-o", str(tmp_path))
    assert code == 2 and "is a folder" in one_error(err)
    target = tmp_path / "target.txt"
    target.write_text("old")
    (tmp_path / "link.txt").symlink_to(target)
    assert in_process(*base, "-o", str(tmp_path / "link.txt"))[0] == 0
    assert (tmp_path / "link.txt").is_symlink() and target.read_text() != "old"
    assert in_process(*base, "-o", str(tmp_path / "x.csv"))[0] == 0
    header = (tmp_path / "x.csv").read_text().splitlines()[0]
    assert header.startswith("stage,item" if view == "coverage" else "group,stage,calls")
    pytest.importorskip("pyarrow")
    assert in_process(*base, "-o", str(tmp_path / "x.parquet"))[0] == 0
    assert (tmp_path / "x.parquet").read_bytes()[:4] == b"PAR1"


@pytest.mark.parametrize("view", ["coverage", "fidelity"])
def test_summary_views_into_a_pipe_closed_early(view: str, wan14: Path) -> None:
    shell = f"{' '.join(CLI)} summary {wan14} --by {view} | head -1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0
    assert "Traceback" not in done.stderr and "error" not in done.stderr
    assert len(done.stdout.splitlines()) == 1


def test_report_of_the_recording_in_html_and_markdown(wan14: Path, tmp_path: Path) -> None:
    assert run(["report", str(wan14), "-o", str(tmp_path / "r.html")]) == 0
    assert run(["report", str(wan14), "-o", str(tmp_path / "r.md")]) == 0
    page = (tmp_path / "r.md").read_text()
    assert "### Coverage of the recorded program" in page and "### Replay fidelity" in page
    assert "fidelity: 79 of 253 timed cards replay more than 10 % away" in page


def test_diff_of_the_recording_against_itself_and_cards_without_coverage(
    wan14: Path, tmp_path: Path
) -> None:
    out = tmp_path / "d.json"
    assert run(["diff", str(wan14), str(wan14), "--format", "json", "-o", str(out),
                "--fail-on", "any"]) == 0  # fmt: skip
    assert json.loads(out.read_text())["counts"] == {"same": 253}
    stripped = json.loads(wan14.read_text())
    stripped.pop("coverage")
    for card in stripped["cards"]:
        card.pop("real_us", None)
        card.pop("real_kernels", None)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(stripped))
    assert run(["diff", str(wan14), str(bare), "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["counts"] == {"same": 253}
    assert run(["diff", str(wan14), str(WITHOUT_COVERAGE), "--format", "json", "-o", str(out)]) == 0


# --- hand-edited coverage in a cards file --------------------------------------------------------

EDITS: dict[str, tuple[Callable[[dict], None], str]] = {
    "coverage_pct a string": (
        lambda d: d["coverage"][0].__setitem__("coverage_pct", "100"),
        "coverage.0.coverage_pct: Input should be a valid number",
    ),
    "a negative real_us": (
        lambda d: d["coverage"][0].__setitem__("real_us", -1),
        "coverage.0.real_us: Input should be greater than or equal to 0",
    ),
    "an unknown key": (
        lambda d: d["coverage"][0].__setitem__("bogus", 1),
        "coverage.0.bogus: Extra inputs are not permitted",
    ),
    "coverage null": (
        lambda d: d.__setitem__("coverage", None),
        "coverage: Input should be a valid list",
    ),
    "a card's negative real_us": (
        lambda d: d["cards"][0].__setitem__("real_us", -1),
        "cards.0.real_us: Input should be greater than or equal to 0",
    ),
}


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize(
    "command", [["summary", "--by", "coverage"], ["summary", "--by", "fidelity"], ["report"]]
)
def test_hand_edited_coverage_is_refused_with_one_line(
    edit: str, command: list[str], wan14: Path, tmp_path: Path
) -> None:
    change, what = EDITS[edit]
    doc = json.loads(wan14.read_text())
    change(doc)
    cards = tmp_path / "edited.json"
    cards.write_text(json.dumps(doc, indent=1))
    extra = ["-o", str(tmp_path / "r.md")] if command == ["report"] else []
    code, _, err = run_cli(command[0], str(cards), *command[1:], *extra)
    line = one_error(err)
    assert code == 3
    assert line.startswith(f"ncu-classify: error: {cards}:")
    assert what in line


def test_cards_without_coverage_read_as_unknown(wan14: Path, tmp_path: Path) -> None:
    doc = json.loads(wan14.read_text())
    doc.pop("coverage")
    cards = tmp_path / "nocov.json"
    cards.write_text(json.dumps(doc))
    code, out, err = run_cli("summary", str(cards), "--by", "coverage")
    assert (code, err) == (0, "")
    assert "coverage: unknown: these cards were not made from a recorded program" in out


@pytest.mark.parametrize("pct", [-5, 1e300])
def test_an_impossible_coverage_pct_is_not_shown_as_is(
    pct: float, wan14: Path, tmp_path: Path
) -> None:
    doc = json.loads(wan14.read_text())
    doc["coverage"][0]["coverage_pct"] = pct
    cards = tmp_path / "edited.json"
    cards.write_text(json.dumps(doc, indent=1))
    code, out, _ = run_cli("summary", str(cards), "--by", "coverage")
    assert code == 3 or (code == 0 and "-5.0%" not in out and "0000000000" not in out), out


def capture_copy(tmp_path: Path, edit: Callable[[dict], None]) -> Path:
    """The 14B capture folder with its manifest edited (the report linked, not copied)."""
    folder = tmp_path / "raw"
    folder.mkdir()
    for item in RECORDING.iterdir():
        if item.name != "manifest.json":
            (folder / item.name).symlink_to(item)
    manifest = json.loads((RECORDING / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_coverage_never_exceeds_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fifty_steps(manifest: dict) -> None:
        for shape in manifest["shapes"]:
            if shape["stage"] == "dit":
                shape["calls"] *= 50

    folder = capture_copy(tmp_path, fifty_steps)
    assert run(["classify", str(folder), "-o", str(tmp_path / "c.json"), "--jobs", "2"]) == 0
    coverage = json.loads((tmp_path / "c.json").read_text())["coverage"]
    dit = next(c for c in coverage if c["stage"] == "dit")
    assert dit["coverage_pct"] is None or dit["coverage_pct"] <= 100, dit["coverage_pct"]


def test_a_stage_missing_from_the_totals_leaves_the_others(tmp_path: Path) -> None:
    """The 14B capture with the stage totals of one stage removed: that stage's coverage is
    unknown, the others stay; no traceback, exit 0."""

    def drop_vae(manifest: dict) -> None:
        manifest["recorded_totals"]["stages"].pop("vae")

    folder = capture_copy(tmp_path, drop_vae)
    code, out, err = run_cli("classify", str(folder), "-o", str(tmp_path / "c.json"))
    assert code == 0 and "Traceback" not in err
    stages = [c["stage"] for c in json.loads((tmp_path / "c.json").read_text())["coverage"]]
    assert stages == ["dit", "output"]
    assert "coverage dit: 100.0 %" in out
