"""record: the shapes the Wan 2.1 DiT and VAE (diffusers, published configs, random weights)
run on CPU at a small resolution, checked against what the architectures must produce; call
counts flowing from a shapes file through capture (stand-in ncu, real H200 reports) into the
cards and the weighted summaries."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import ROOT, unstamped

from ncu_classify.cli.entry import run
from ncu_classify.shapes.file import ShapesFile, load_shapes

SCRIPT = ROOT / "fixtures" / "models" / "record_wan.py"
FAKEBIN = ROOT / "tests" / "fakebin"
FAULTS = ROOT / "fixtures" / "fault_h200"


@pytest.fixture(scope="module")
def recorded(wan_recording: Path) -> dict:
    """The small Wan recording, as {stage: [shape mapping]}, the `recorded` block and its
    device ops (the `aten` shapes, as entries with their stage and group id)."""
    out = wan_recording
    shapes = load_shapes(out)  # a normal shapes file
    stages = {
        stage: [s.model_dump(by_alias=True, exclude_defaults=False) for s in items]
        for stage, items in shapes.stages.items()
    }
    assert shapes.recorded is not None
    aten = [e for e in shapes.entries() if e.shape.op == "aten"]
    return {
        "stages": stages,
        "recorded": shapes.recorded,
        "aten": aten,
        "file": shapes,
        "text": out.read_text(),
    }


def _find(shapes: list[dict], **want: object) -> dict:
    found = [s for s in shapes if all(s.get(k) == v for k, v in want.items())]
    assert len(found) == 1, (want, [s for s in shapes if s["op"] == want.get("op")])
    return found[0]


def test_vae_causal_convs_after_their_temporal_padding(recorded: dict) -> None:
    """Latent [1,16,2,8,8] (5 frames at 64x64): the decoder runs frame by frame, each causal
    3x3x3 conv sees its frame plus 2 cached or zero-padded frames (T=3) and +1 spatial pad on
    each side; the first up block's time_conv (3x1x1) sees 1 frame + 2 padded."""
    vae = recorded["stages"]["vae"]
    post = _find(vae, op="conv3d", weight=[16, 16, 1, 1, 1])
    assert (post["input"], post["calls"]) == ([1, 16, 2, 8, 8], 1)  # once, on all frames
    conv_in = _find(vae, op="conv3d", weight=[384, 16, 3, 3, 3])
    assert (conv_in["input"], conv_in["calls"]) == ([1, 16, 3, 10, 10], 2)  # once per frame
    assert conv_in["padding"] == [0, 0, 0] and conv_in["source"] == "vae.decoder.conv_in"
    mid = _find(vae, op="conv3d", input=[1, 384, 3, 10, 10], weight=[384, 384, 3, 3, 3])
    # mid block: 2 resnets x 2 convs, up block 0: 3 resnets x 2 convs, per latent frame
    assert mid["calls"] == (4 + 6) * 2
    out = _find(vae, op="conv3d", weight=[3, 96, 3, 3, 3], input=[1, 96, 3, 66, 66])
    assert out["source"] == "vae.decoder.conv_out" and out["calls"] == 1
    time_conv = _find(vae, op="conv3d", weight=[768, 384, 3, 1, 1], input=[1, 384, 3, 8, 8])
    assert time_conv["calls"] == 1
    assert all(s["dtype"] == "fp32" and s["allow_tf32"] for s in vae if s["op"] == "conv3d")


def test_vae_2d_upsampling_convs_run_per_frame(recorded: dict) -> None:
    """WanResample's 2-D 3x3 conv after each spatial upsampling takes the frames as its batch:
    1 frame for the first latent frame, then 2 and 4 as the temporal upsampling doubles them."""
    convs = [s for s in recorded["stages"]["vae"] if s["op"] == "conv2d"]
    first = _find(convs, input=[1, 384, 16, 16], weight=[192, 384, 3, 3])
    assert (first["padding"], first["calls"]) == ([1, 1], 1)
    _find(convs, input=[2, 384, 16, 16], weight=[192, 384, 3, 3])
    _find(convs, input=[4, 192, 64, 64], weight=[96, 192, 3, 3])
    qkv = _find(convs, weight=[1152, 384, 1, 1])  # the mid-block attention's to_qkv
    assert qkv["input"] == [1, 384, 8, 8] and qkv["calls"] == 2


def test_dit_attention_heads_head_dim_and_sequence(recorded: dict) -> None:
    """1.3B config (12 heads x 128), 2 blocks: tokens = 2 frames x (8/2) x (8/2) = 32."""
    dit = recorded["stages"]["dit"]
    self_attention = _find(dit, op="attention", role="self")
    assert (self_attention["heads"], self_attention["head_dim"]) == (12, 128)
    assert (self_attention["q_len"], self_attention["valid_keys"]) == (32, 32)
    assert self_attention["calls"] == 2 and self_attention["backend"] == "sdpa"
    cross = _find(dit, op="attention", role="cross")
    assert (cross["q_len"], cross["valid_keys"], cross["calls"]) == (32, 16, 2)
    qkvo = _find(dit, op="linear", M=32, N=1536, K=1536)
    assert qkvo["calls"] == 6 * 2 and qkvo["bias"]  # q, k, v, out, cross q, cross out
    up = _find(dit, op="linear", M=32, N=8960, K=1536)
    down = _find(dit, op="linear", M=32, N=1536, K=8960)
    assert up["calls"] == down["calls"] == 2
    patch = _find(dit, op="conv3d", weight=[1536, 16, 1, 2, 2])
    assert patch["input"] == [1, 16, 2, 8, 8] and patch["stride"] == [1, 2, 2]


def test_output_cast_and_what_the_recording_covers(recorded: dict) -> None:
    """The function calls that are no typed shape (F.silu) are their dispatched ATen ops, the
    2-D convs are typed shapes (no `aten.convolution` left), views are no work; on CPU the
    totals count calls and nothing is left uncovered. The old `unreplayable` census and
    `recorded.ops` list are not written any more."""
    cast = _find(recorded["stages"]["output"], op="cast")
    assert (cast["shape"], cast["from"], cast["to"]) == ([1, 3, 5, 64, 64], "fp32", "uint8")
    silu: dict[str, int] = {}
    for entry in recorded["aten"]:
        if entry.shape.overload == "aten.silu.default":
            silu[entry.stage] = silu.get(entry.stage, 0) + entry.shape.calls
    assert silu == {"dit": 2, "vae": 58}  # the 60 calls of F.silu the old census counted
    overloads = {e.shape.overload.split(".")[1] for e in recorded["aten"]}
    assert "convolution" not in overloads  # the VAE's 2-D convs are shapes now
    assert not overloads & {"view", "_unsafe_view", "permute", "expand", "as_strided"}
    totals = recorded["recorded"].totals
    assert totals is not None and (totals.basis, totals.uncovered) == ("calls", [])
    assert {stage: t.calls for stage, t in totals.stages.items()} == {
        "dit": 166,
        "vae": 705,
        "output": 9,
    }
    assert recorded["recorded"].model_fields_set == {
        "command",
        "tool_version",
        "torch",
        "device",
        "totals",
    }  # neither `unreplayable` nor `ops` in the file
    assert recorded["recorded"].command.endswith("--height 64 --width 64")
    assert '    - {op: "linear", M: 32, N: 1536, K: 1536,' in recorded["text"]
    assert '    - {op: "aten", name: "aten.linalg_vector_norm.default:' in recorded["text"]


def test_record_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x.yaml")
    assert run(["record", "-o", out]) == 2
    assert run(["record", "-o", out, "--stage", "nothing", "--", "python", str(SCRIPT)]) == 2
    assert run(["record", "-o", out, "--", "python", str(tmp_path / "missing.py")]) == 2
    assert run(["record", "-o", str(SCRIPT), "--", "python", str(SCRIPT)]) == 2  # its input
    err = capsys.readouterr().err
    assert "give the program to record after --" in err
    assert "--stage 'nothing': expected MODULE_PATTERN=STAGE" in err
    assert "missing.py: no such script" in err and "is also an input" in err


@pytest.mark.needs("torch")
def test_a_failing_program_keeps_what_it_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "fails.py"
    script.write_text(
        "import torch\nx = torch.randn(8, 16)\nw = torch.randn(4, 16)\n"
        "torch.nn.functional.linear(x, w)\nraise ValueError('model broke')\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 5
    assert "fails.py raised ValueError: model broke; the 3 shapes recorded" in (
        capsys.readouterr().err
    )
    # the linear, and the two factories that drew its operands (device ops, `aten` shapes)
    got = [(s.op, s.name, s.calls) for s in load_shapes(out).stages["main"]]
    assert got == [
        ("linear", None, 1),
        ("aten", "aten.randn.default", 1),
        ("aten", "aten.randn.default:2", 1),
    ]


def test_calls_weigh_the_cards_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shapes file saying how often each shape runs: capture (stand-in ncu, real H200
    reports) keeps the counts, cards carry them, the summary multiplies time by them."""
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(FAULTS))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG"):
        monkeypatch.delenv(name, raising=False)
    text = (FAULTS / "dit3.yaml").read_text()
    text = text.replace("bias: true}", "bias: true, calls: 40, source: blocks.*.to_q}", 1)
    shapes = tmp_path / "dit3.yaml"
    shapes.write_text(text)
    raw, cards = tmp_path / "raw", tmp_path / "cards.json"
    assert run(["capture", "--shapes", str(shapes), "-o", str(raw)]) == 0
    assert run(["classify", str(raw), "-o", str(cards), "--jobs", "1"]) == 0
    from ncu_classify.cards.files import load_card_file

    loaded = load_card_file(cards).cards
    assert [(c.calls, c.source) for c in loaded] == [(40, "blocks.*.to_q"), (1, None), (1, None)]
    capsys.readouterr()
    assert run(["summary", str(cards), "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    big = loaded[0].summed_kernel_us
    assert big is not None
    compute = [r for r in rows if r.startswith("dit,compute_bound,")]
    assert compute == [f"dit,compute_bound,1,40,{round(40 * big, 3)},{compute[0].split(',')[5]},0"]


@pytest.mark.needs("torch")
def test_building_the_model_is_not_recorded() -> None:
    """Initialisers and `model.to(dtype)` of parameters and buffers are setup: only what the
    model runs counts; a factory is no typed shape, its device op (`aten.randn`) is kept."""
    import torch

    from ncu_classify.record import Recorder
    from ncu_classify.record.document import validated_document
    from ncu_classify.shapes.aten import AtenShape

    with Recorder(stages=[("", "output")]) as recorder:
        model = torch.nn.Linear(16, 8)
        model.register_buffer("freqs", torch.randn(4, 4))
        model = model.to(torch.bfloat16)
        x = torch.randn(3, 16).to(torch.bfloat16)
        model(x).float()
    document = validated_document(recorder, "test")
    got = [
        (stage, s.op, w.get("shape") or [w.get("M"), w.get("N")], s.calls)
        for stage, shapes in document.stages.items()
        for s in shapes
        if s.op != "aten" and (w := s.written())
    ]
    assert got == [
        ("output", "cast", [3, 16], 1),
        ("output", "cast", [3, 8], 1),
        ("model", "linear", [3, 8], 1),
    ]
    # no init (uniform_), no cast of the parameters or the buffer (_to_copy, copy_)
    ops = [
        (stage, s.name, s.args, s.calls)
        for stage, shapes in document.stages.items()
        for s in shapes
        if isinstance(s, AtenShape)
    ]
    assert ops == [
        ("output", "aten.randn.default", [[4, 4]], 1),
        ("output", "aten.randn.default:2", [[3, 16]], 1),
    ]
    totals = document.recorded.totals
    assert totals is not None and totals.uncovered == []
    stages = {stage: t.model_dump(exclude_none=True) for stage, t in totals.stages.items()}
    assert stages == {"output": {"calls": 4}, "model": {"calls": 1}}


def test_recorded_h200_capture_reproduces_and_weighs_by_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, derived_cards: Path
) -> None:
    """The Wan 2.1 recording captured on the H200: the cards regenerate.sh writes
    (reports/record/cards_wan_480x832.json, as `derived_cards` has them) are what classify
    writes from the raw report, every shape replayed its recorded inputs, and the summary's
    time per inference is each card's summed kernel time x its calls."""
    recorded_cards = derived_cards / "cards_wan_480x832.json"
    from ncu_classify.cards.files import load_card_file
    from ncu_classify.cards.rollup import by_stage

    monkeypatch.chdir(ROOT)
    fresh = tmp_path / "cards.json"
    assert run(["classify", "fixtures/record_h200", "-o", str(fresh), "--jobs", "2"]) == 0
    assert unstamped(fresh.read_text()) == unstamped(recorded_cards.read_text())
    cards = load_card_file(recorded_cards).cards
    assert len(cards) == 43 and {c.input_source for c in cards} == {"recorded"}
    qkvo = next(c for c in cards if c.group == "dit:linear:M4680_N5120_K5120:bf16:bias")
    assert qkvo.calls == 240  # 40 blocks x (q, k, v, out of self-attention, q, out of cross)
    attention = next(c for c in cards if c.group.startswith("dit:sdpa:self_b1_h40_d128_q4680"))
    assert attention.calls == 40 and attention.source == "transformer.blocks.*.attn1"
    rows = {(r.stage, r.primary): r for r in by_stage(cards)}
    dit = rows["dit", "compute_bound"]
    expected = sum(
        (c.summed_kernel_us or 0) * c.calls
        for c in cards
        if (c.stage, c.primary) == ("dit", "compute_bound")
    )
    assert dit.kernel_us == round(expected, 3) and dit.calls == 443


def test_conv2d_shape_arithmetic() -> None:
    from pydantic import ValidationError

    from ncu_classify.shapes.ops import Conv2dShape

    shape = Conv2dShape(
        op="conv2d", input=[4, 192, 64, 64], weight=[96, 192, 3, 3], padding=[1, 1], bias=True
    )
    assert shape.output() == [4, 96, 64, 64]
    assert shape.nominal_flops() == 2 * 4 * 96 * 64 * 64 * 192 * 9
    assert shape.key() == "conv2d:in4x192x64x64_w96x192x3x3_s1x1_p1x1:fp32:tf32:bias"
    with pytest.raises(ValidationError, match="input channels 192 != weight in-channels 96"):
        Conv2dShape(op="conv2d", input=[1, 192, 8, 8], weight=[96, 96, 3, 3])


@pytest.mark.needs("torch")
def test_record_refuses_what_would_lose_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before the program runs (or, for its imported modules, before anything is
    written): nothing of the user's is replaced, no shapes file is left that capture refuses."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text("import torch\nF = torch.nn.functional\n")
    (tmp_path / "main.py").write_text(
        "import torch, helper\nhelper.F.linear(torch.randn(4, 8), torch.randn(2, 8))\n"
    )
    (tmp_path / "afile").write_text("x")
    program = ["--", "python", "main.py"]
    cases = [
        (["-o", "-"], "-o -: the program prints to standard output too"),
        (["-o", "s.yaml", "--save-inputs", "afile"], "--save-inputs afile: is not a folder"),
        (["-o", "s.yaml", "--inputs-budget-mb", "inf"], "--inputs-budget-mb inf: expected"),
        (["-o", "helper.py"], "-o helper.py: is also an input"),
        # without `--` the program's options would be record's: refused, not swallowed
        (["-o", "s.yaml", "python", "main.py", "--layers", "2"], "No such option: --layers"),
    ]
    for argv, message in cases:
        extra = [] if "python" in argv else program
        assert run(["record", *argv, *extra]) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert (tmp_path / "helper.py").read_text().startswith("import torch")
    assert not (tmp_path / "s.yaml").exists()


@pytest.mark.needs("torch")
def test_paths_follow_the_running_parents_and_parameters_in_ops_count() -> None:
    """A submodule shared by two parents is named under the one that called it; addmm with a
    parameter bias (GPT-2's Conv1D) is inference; sort's tuple result is recorded (an `aten`
    shape with both outputs)."""
    import torch

    from ncu_classify.record import Recorder

    class Conv1D(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(8, 6))
            self.bias = torch.nn.Parameter(torch.zeros(6))

        def forward(self, x):  # type: ignore[no-untyped-def]
            return torch.addmm(self.bias, x, self.weight)

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            shared = torch.nn.Linear(8, 8)
            self.enc = torch.nn.Sequential(shared)
            self.dec = torch.nn.Sequential(shared)
            self.head = Conv1D()

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.head(self.dec(self.enc(x))).sort(dim=-1)

    net = Net()
    with Recorder(stages=[("net.dec.*", "decoder"), ("net.enc.*", "encoder")]) as recorder:
        net(torch.randn(4, 8))
    document = recorder.described_calls("test")
    linear = {stage: s[0]["source"] for stage, s in document.stages.items()}
    assert linear["encoder"] == "net.enc.*" and linear["decoder"] == "net.dec.*"
    head = document.stages["net"][0]
    assert (head["op"], head["M"], head["N"], head["K"], head["bias"]) == ("linear", 4, 6, 8, True)
    ops = {
        (stage, s["overload"]): s
        for stage, shapes in document.stages.items()
        for s in shapes
        if s["op"] == "aten"
    }
    assert set(ops) == {("net", "aten.sort.default"), ("main", "aten.randn.default")}
    sort = ops["net", "aten.sort.default"]
    assert (sort["calls"], sort["source"]) == (1, "net")
    spec = {"shape": [4, 6], "dtype": "float32", "strides": [6, 1], "offset": 0}
    assert sort["args"] == [{"tensor": spec}]
    assert [(o["shape"], o["dtype"]) for o in sort["outputs"]] == [
        ([4, 6], "float32"),
        ([4, 6], "int64"),
    ]  # values and indices
    assert document.recorded.totals is not None and document.recorded.totals.uncovered == []


@pytest.mark.needs("torch")
def test_stage_names_stay_text_in_yaml(tmp_path: Path) -> None:
    script = tmp_path / "p.py"
    script.write_text(
        "import torch\ntorch.nn.functional.linear(torch.randn(4, 8), torch.randn(2, 8))\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--stage", "=null", "--", "python", str(script)]) == 0
    assert list(load_shapes(out).stages) == ["null"]


# --- every other device op, at the dispatch level ------------------------------------------


def _ops(recorded: dict, stage: str) -> dict:
    """The `aten` shapes of one stage, by group id."""
    return {e.group: e.shape for e in recorded["aten"] if e.stage == stage}


def test_ops_the_typed_shapes_stand_for_are_not_listed_again(recorded: dict) -> None:
    """linear -> addmm, conv3d/conv2d -> convolution, attention -> its SDPA kernel: the typed
    shapes stand for them; a view is no work."""
    names = {e.shape.overload for e in recorded["aten"]}
    assert len(names) == 27 and "aten.mul.Tensor" in names  # the check below sees real names
    assert not {n for n in names if n.split(".")[1] in ("addmm", "mm", "bmm", "convolution")}
    assert not {n for n in names if "scaled_dot_product" in n}
    assert not {n for n in names if n.split(".")[1] in ("view", "permute", "transpose", "expand")}


def test_the_vae_norm_on_a_strided_view_is_listed_with_its_strides(recorded: dict) -> None:
    """After the 2-D upsampling the frames come back as a permuted view: the RMS norm's
    vector norm, division, scale and SiLU run on it (strided kernels), apart from the same
    ops on the contiguous tensor of that size."""
    vae = _ops(recorded, "vae")
    norm = vae["vae:aten.linalg_vector_norm.default:1x192x4x32x32:fp32:strided"]
    assert norm.name == "aten.linalg_vector_norm.default:1x192x4x32x32:fp32:strided"
    assert norm.overload == "aten.linalg_vector_norm.default"
    spec = {
        "shape": [1, 192, 4, 32, 32],
        "dtype": "float32",
        "strides": [786432, 1024, 196608, 32, 1],
    }
    assert norm.args[0] == {"tensor": {**spec, "offset": 0}}  # a permuted view: T before C
    assert norm.args[1:] == [2.0, [1], True] and norm.calls == 1
    assert norm.source == "vae.decoder.up_blocks.*.resnets.*.norm1"
    [output] = norm.outputs
    assert (output.shape, output.strides) == ([1, 1, 4, 32, 32], [4096, 4096, 1024, 32, 1])
    dense = vae["vae:aten.linalg_vector_norm.default:1x192x4x32x32:fp32"]
    assert dense.args[0]["tensor"]["strides"] == [786432, 4096, 1024, 32, 1] and dense.calls == 5
    divide = vae["vae:aten.div.Tensor:1x192x4x32x32:fp32:strided:broadcast"]
    assert divide.args[0]["tensor"]["strides"] == [786432, 1024, 196608, 32, 1]
    assert divide.args[1]["tensor"]["strides"] == [4096, 0, 1024, 32, 1]  # the norm, expanded


def test_list_inplace_index_and_reduction_ops_are_listed(recorded: dict) -> None:
    ops = [e.shape for e in recorded["aten"]]
    stacks = [op for op in ops if op.overload == "aten.stack.default"]
    assert [(len(op.args[0]), op.args[1], op.calls) for op in stacks] == [(2, 3, 1), (2, 3, 1)]
    assert all("tensor" in t for op in stacks for t in op.args[0])
    cats = [op for op in ops if op.overload == "aten.cat.default"]
    assert len(cats) == 13 and all("tensor" in t for op in cats for t in op.args[0])
    assert sum(op.calls for op in cats) == 47
    overloads = {op.overload for op in ops}
    assert overloads >= {"aten.copy_.default", "aten.add_.Scalar", "aten.mean.dim"}
    # the RoPE writes the even and the odd features of a view: in place, offset 0 and 1
    copies = _ops(recorded, "dit")
    even = copies["dit:aten.copy_.default:1x32x12x64:fp32:strided"]
    odd = copies["dit:aten.copy_.default:1x32x12x64:fp32:strided:2"]
    written = [op.args[0]["tensor"] for op in (even, odd)]
    assert [(w["strides"], w["offset"]) for w in written] == [
        ([49152, 1536, 128, 2], 0),
        ([49152, 1536, 128, 2], 1),
    ]
    assert even.calls == odd.calls == 4 and even.source == "transformer.blocks.*.attn1"
    assert sum(op.calls for op in ops) == 771 and len(ops) == 211
    groups = [e.group for e in recorded["aten"]]
    assert len(set(groups)) == len(groups)  # ids are unique
    assert all(e.group == f"{e.stage}:{e.shape.name}" for e in recorded["aten"])


def test_recorded_totals_are_the_shapes_and_the_uncovered_calls(recorded: dict) -> None:
    """`recorded.totals.stages`: each stage's calls are its shapes' calls (typed and `aten`)
    plus its uncovered calls, for every stage of the Wan recording."""
    totals = recorded["recorded"].totals
    assert totals is not None
    expected: dict[str, int] = {}
    for entry in recorded["file"].entries():
        expected[entry.stage] = expected.get(entry.stage, 0) + entry.shape.calls
    for item in totals.uncovered:
        expected[item.stage] = expected.get(item.stage, 0) + item.calls
    assert {stage: t.calls for stage, t in totals.stages.items()} == expected
    assert expected == {"dit": 166, "vae": 705, "output": 9}
    aten: dict[str, int] = {}
    for entry in recorded["aten"]:
        aten[entry.stage] = aten.get(entry.stage, 0) + entry.shape.calls
    assert aten == {"dit": 135, "vae": 628, "output": 8}  # the rest are the typed shapes' calls
    assert all((t.kernels, t.kernel_us) == (None, None) for t in totals.stages.values())


def test_an_old_shapes_file_with_recorded_ops_still_loads(tmp_path: Path) -> None:
    """A file of the first recorder of device ops lists them under `recorded.ops` (with an
    `unreplayable` census): it loads, and its ops are `aten` shapes of their stages, named by
    their ids less the stage, after the stages' own shapes."""
    old = tmp_path / "old.yaml"
    old.write_text(
        "stages:\n"
        "  main:\n"
        '    - {op: "linear", M: 8, N: 4, K: 4, dtype: "fp32", bias: false, calls: 3}\n'
        "recorded:\n"
        '  command: "python prog.py"\n'
        '  tool_version: "0.1.0"\n'
        '  torch: "2.9.0+cpu"\n'
        '  device: "cpu"\n'
        "  unreplayable:\n"
        '    "Tensor.sort": 1\n'
        "  ops:\n"
        '    - {"id": "main:aten.mul.Tensor:4x4:fp32", "stage": "main", "op": "aten.mul.Tensor",'
        ' "args": [{"tensor": {"shape": [4, 4], "dtype": "float32", "strides": [4, 1],'
        ' "offset": 0}}, 2.0], "calls": 3, "source": "(no module)"}\n'
        '    - {"id": "main:aten.mul.Tensor:4x4:fp32:2", "stage": "main", "op": "aten.mul.Tensor",'
        ' "args": [{"tensor": {"shape": [4, 4], "dtype": "float32", "strides": [1, 4],'
        ' "offset": 0}}, 3.0], "calls": 1, "source": "(no module)"}\n'
        '    - {"id": "post:aten.masked_fill.Scalar:3x4:fp32", "stage": "post",'
        ' "op": "aten.masked_fill.Scalar", "args": [{"tensor": {"shape": [3, 4],'
        ' "dtype": "float32", "strides": [4, 1], "offset": 0}}, {"tensor": {"shape": [3, 4],'
        ' "dtype": "bool", "strides": [4, 1], "offset": 0}}, {"float": "-inf"}], "calls": 2}\n'
    )
    loaded = load_shapes(old)
    assert loaded.recorded is not None and loaded.recorded.totals is None
    assert loaded.recorded.unreplayable == {"Tensor.sort": 1}
    got = [(e.stage, e.group, e.shape.op, e.shape.calls, e.shape.source) for e in loaded.entries()]
    assert got == [
        ("main", "main:linear:M8_N4_K4:fp32", "linear", 3, None),
        ("main", "main:aten.mul.Tensor:4x4:fp32", "aten", 3, "(no module)"),
        ("main", "main:aten.mul.Tensor:4x4:fp32:2", "aten", 1, "(no module)"),
        ("post", "post:aten.masked_fill.Scalar:3x4:fp32", "aten", 2, None),
    ]
    from ncu_classify.shapes.aten import AtenShape

    mul2, fill = loaded.entries()[2].shape, loaded.entries()[3].shape
    assert isinstance(mul2, AtenShape) and isinstance(fill, AtenShape)
    assert (mul2.name, mul2.overload) == ("aten.mul.Tensor:4x4:fp32:2", "aten.mul.Tensor")
    assert mul2.args[1] == 3.0
    assert [t.strides for t in mul2.tensors()] == [[1, 4]]
    assert fill.args[2] == {"float": "-inf"}
    assert [t.dtype for t in fill.tensors()] == ["float32", "bool"]
    # an id repeated is a duplicate group id, as in the stages
    old.write_text(old.read_text().replace("fp32:2", "fp32"))
    from ncu_classify.core.errors import ShapesError

    with pytest.raises(ShapesError, match=r"duplicate group id 'main:aten\.mul\.Tensor:4x4:fp32'"):
        load_shapes(old)


@pytest.mark.needs("torch")
def test_an_index_op_and_a_non_finite_scalar_survive_the_shapes_file(tmp_path: Path) -> None:
    """x[idx] records aten.index.Tensor with its int64 index; masked_fill(-inf) keeps the
    -inf (JSON and YAML have no such number); the file reads back with the same ops."""
    loaded = _recorded_script(
        tmp_path,
        "import torch\n"
        "x = torch.randn(8, 4)\n"
        "idx = torch.tensor([3, 1, 2])\n"
        "for _ in range(3):\n"
        "    y = x[idx].masked_fill(x[idx] > 0, float('-inf')).sum()\n"
        "    z = torch.nn.functional.linear(x, torch.ones(4, 4))\n",
    )
    ops = {s.overload: s for s in loaded.stages["main"] if s.op == "aten"}  # type: ignore[union-attr]
    index = ops["aten.index.Tensor"]
    assert index.calls == 6 and index.args[1][0]["tensor"]["dtype"] == "int64"
    assert index.name == "aten.index.Tensor:8x4:fp32"
    assert ops["aten.masked_fill.Scalar"].args[2] == {"float": "-inf"}
    assert "aten.mm.default" not in ops and "aten.ones.default" in ops  # F.linear is a shape
    assert set(ops) == {
        "aten.randn.default",
        "aten.index.Tensor",
        "aten.gt.Scalar",
        "aten.masked_fill.Scalar",
        "aten.sum.default",
        "aten.ones.default",
    }
    assert loaded.recorded is not None and loaded.recorded.totals is not None
    assert loaded.recorded.totals.uncovered == []  # an integer index does not depend on values
    assert loaded.recorded.totals.stages["main"].calls == 3 + 1 + 6 + 3 + 3 + 3 + 3


@pytest.mark.needs("torch")
def test_ops_whose_work_depends_on_the_values_are_uncovered_with_the_reason(
    tmp_path: Path,
) -> None:
    """A boolean-mask index and `nonzero` do work that depends on the values: a replay on
    drawn values would do other work, so they are no shapes but uncovered calls, saying why;
    an integer index of the same tensor stays a shape."""
    loaded = _recorded_script(
        tmp_path,
        "import torch\n"
        "x = torch.randn(8, 4)\n"
        "for _ in range(2):\n"
        "    y = x[x > 0]\n"
        "    n = torch.nonzero(x)\n"
        "    z = x[torch.tensor([0, 2])]\n",
    )
    names = [(s.name, s.calls) for s in loaded.stages["main"]]
    assert names == [
        ("aten.randn.default", 1),
        ("aten.gt.Scalar:8x4:fp32", 2),
        ("aten.index.Tensor:8x4:fp32", 2),  # x[tensor([0, 2])]
    ]
    index = loaded.stages["main"][2]
    assert index.args[1][0]["tensor"]["dtype"] == "int64"  # type: ignore[union-attr]
    totals = loaded.recorded.totals  # type: ignore[union-attr]
    assert totals is not None
    assert [(u.stage, u.name, u.why, u.calls) for u in totals.uncovered] == [
        ("main", "aten.index.Tensor:8x4:fp32",
         "a boolean-mask index: the work depends on how many values are true", 2),
        ("main", "aten.nonzero.default:8x4:fp32",
         "its output size depends on the values of its inputs", 2),
    ]  # fmt: skip
    assert totals.stages["main"].calls == 1 + 2 + 2 + 2 + 2


@pytest.mark.needs("torch")
def test_uncovered_ops_that_read_alike_are_numbered(tmp_path: Path) -> None:
    """Mochi's attention takes `nonzero` of each prompt's row of the text mask: two distinct
    calls (the rows' offsets differ) whose readable ids are one. Their lines of uncovered
    work are numbered as the stage's shapes are (`:2`), not listed twice under one name."""
    totals = _recorded_script(
        tmp_path,
        "import torch\n"
        "mask = torch.zeros(2, 16, dtype=torch.bool)\n"
        "mask[0, :1] = True\n"
        "mask[1, :9] = True\n"
        "for idx in range(2):\n"
        "    keep = torch.nonzero(mask[idx])\n",
    ).recorded.totals  # type: ignore[union-attr]
    assert totals is not None
    assert [(u.name, u.calls) for u in totals.uncovered] == [
        ("aten.nonzero.default:16:bool", 1),
        ("aten.nonzero.default:16:bool:2", 1),
    ]


@pytest.mark.needs("torch")
def test_an_op_that_takes_and_makes_no_tensor_is_no_device_work() -> None:
    """On the H200 the recording listed `torchvision._cuda_version` and two torchaudio probes
    (dispatched at import, returning ints): no device work, and not replayable."""
    import torch

    from ncu_classify.record.device_ops import touches_tensors

    assert not touches_tensors((), {}, 12080)
    assert touches_tensors(([4, 64],), {"device": None}, torch.zeros(1))  # a factory
    assert touches_tensors(([torch.zeros(1), torch.zeros(1)],), {}, torch.zeros(2))  # cat
    assert touches_tensors((torch.zeros(2),), {}, 2)  # reads a tensor (a reduction to int)


@pytest.mark.needs("torch")
def test_distinct_ops_beyond_the_cap_are_counted_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program whose shapes never repeat: the first MAX_DISTINCT ops are `aten` shapes, the
    calls of the others counted by stage and op name under recorded.totals.uncovered, and in
    the stage's total."""
    from ncu_classify.record import device_ops

    monkeypatch.setattr(device_ops, "MAX_DISTINCT", 3)
    loaded = _recorded_script(
        tmp_path,
        "import torch\nw = torch.ones(2, 2)\ntorch.nn.functional.linear(torch.ones(2, 2), w)\n"
        "for n in range(1, 7):\n    torch.ones(n).neg()\n",
    )
    # kept: ones([2, 2]) (2 calls), then ones([1]) and its neg; the 5 other sizes are not
    kept = [(s.name, s.args, s.calls) for s in loaded.stages["main"] if s.op == "aten"]  # type: ignore[union-attr]
    one = {"tensor": {"shape": [1], "dtype": "float32", "strides": [1], "offset": 0}}
    assert kept == [
        ("aten.ones.default", [[2, 2]], 2),
        ("aten.ones.default:2", [[1]], 1),
        ("aten.neg.default:1:fp32", [one], 1),
    ]
    totals = loaded.recorded.totals  # type: ignore[union-attr]
    assert totals is not None
    beyond = [(u.stage, u.name, u.why, u.calls) for u in totals.uncovered]
    assert beyond == [
        ("main", "aten.neg.default (a distinct call beyond the 3 a recording keeps)",
         "beyond the recording's cap", 5),
        ("main", "aten.ones.default (a distinct call beyond the 3 a recording keeps)",
         "beyond the recording's cap", 5),
    ]  # fmt: skip
    assert totals.stages["main"].calls == 1 + 4 + 10  # the linear, the kept ops, the others


def _recorded_script(tmp_path: Path, source: str) -> ShapesFile:
    """The shapes file `record` writes for a program of that source (run as a user runs it)."""
    script = tmp_path / "program.py"
    script.write_text(source)
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 0
    return load_shapes(out)
