"""record: the shapes the Wan 2.1 DiT and VAE (diffusers, published configs, random weights)
run on CPU at a small resolution, checked against what the architectures must produce; call
counts flowing from a shapes file through capture (stand-in ncu, real H200 reports) into the
cards and the weighted summaries."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ROOT, import_or_skip, unstamped

from ncu_classify.capture.shapes import load_shapes
from ncu_classify.cli.entry import run

SCRIPT = ROOT / "fixtures" / "models" / "record_wan.py"
FAKEBIN = ROOT / "tests" / "fakebin"
FAULTS = ROOT / "fixtures" / "fault_h200"


@pytest.fixture(scope="module")
def recorded(wan_recording: Path) -> dict:
    """The small Wan recording, as {stage: [shape mapping]} plus the `recorded` block."""
    out = wan_recording
    shapes = load_shapes(out)  # a normal shapes file
    stages = {
        stage: [s.model_dump(by_alias=True, exclude_defaults=False) for s in items]
        for stage, items in shapes.stages.items()
    }
    assert shapes.recorded is not None
    return {"stages": stages, "recorded": shapes.recorded, "text": out.read_text()}


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


def test_output_cast_and_what_could_not_be_replayed(recorded: dict) -> None:
    cast = _find(recorded["stages"]["output"], op="cast")
    assert (cast["shape"], cast["from"], cast["to"]) == ([1, 3, 5, 64, 64], "fp32", "uint8")
    unreplayable = recorded["recorded"].unreplayable
    assert "torch.conv2d" not in unreplayable  # the VAE's 2-D convs are shapes now
    assert unreplayable["F.silu"] > 0 and "Tensor.view" not in unreplayable  # views are free
    assert recorded["recorded"].command.endswith("--height 64 --width 64")
    assert '    - {op: "linear", M: 32, N: 1536, K: 1536,' in recorded["text"]


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


def test_a_failing_program_keeps_what_it_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_or_skip("torch")
    script = tmp_path / "fails.py"
    script.write_text(
        "import torch\nx = torch.randn(8, 16)\nw = torch.randn(4, 16)\n"
        "torch.nn.functional.linear(x, w)\nraise ValueError('model broke')\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 5
    assert "fails.py raised ValueError: model broke; the 1 shapes recorded" in (
        capsys.readouterr().err
    )
    [shape] = load_shapes(out).stages["main"]
    assert (shape.op, shape.calls) == ("linear", 1)  # type: ignore[union-attr]


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


def test_building_the_model_is_not_recorded() -> None:
    """Initialisers, `model.to(dtype)` of parameters and buffers, and factories are setup:
    only what the model runs counts."""
    torch = import_or_skip("torch")
    from ncu_classify.record import Recorder

    with Recorder(stages=[("", "output")]) as recorder:
        model = torch.nn.Linear(16, 8)
        model.register_buffer("freqs", torch.randn(4, 4))
        model = model.to(torch.bfloat16)
        x = torch.randn(3, 16).to(torch.bfloat16)
        model(x).float()
    document = recorder.shapes_document("test")
    got = [
        (stage, s["op"], s.get("shape") or [s.get("M"), s.get("N")], s["calls"])
        for stage, shapes in document["stages"].items()
        for s in shapes
    ]
    assert got == [
        ("output", "cast", [3, 16], 1),
        ("output", "cast", [3, 8], 1),
        ("model", "linear", [3, 8], 1),
    ]
    assert document["recorded"]["unreplayable"] == {}


RECORDED_CARDS = ROOT / "reports" / "record" / "cards_wan_480x832.json"


def test_recorded_h200_capture_reproduces_and_weighs_by_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Wan 2.1 recording captured on the H200: the committed cards are what classify
    writes from the raw report, every shape replayed its recorded inputs, and the summary's
    time per inference is each card's summed kernel time x its calls."""
    from ncu_classify.cards.files import load_card_file
    from ncu_classify.cards.rollup import by_stage

    monkeypatch.chdir(ROOT)
    fresh = tmp_path / "cards.json"
    assert run(["classify", "fixtures/record_h200", "-o", str(fresh), "--jobs", "2"]) == 0
    assert unstamped(fresh.read_text()) == unstamped(RECORDED_CARDS.read_text())
    cards = load_card_file(RECORDED_CARDS).cards
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

    from ncu_classify.capture.ops import Conv2dShape

    shape = Conv2dShape(
        op="conv2d", input=[4, 192, 64, 64], weight=[96, 192, 3, 3], padding=[1, 1], bias=True
    )
    assert shape.output() == [4, 96, 64, 64]
    assert shape.nominal_flops() == 2 * 4 * 96 * 64 * 64 * 192 * 9
    assert shape.key() == "conv2d:in4x192x64x64_w96x192x3x3_s1x1_p1x1:fp32:tf32:bias"
    with pytest.raises(ValidationError, match="input channels 192 != weight in-channels 96"):
        Conv2dShape(op="conv2d", input=[1, 192, 8, 8], weight=[96, 96, 3, 3])


def test_record_refuses_what_would_lose_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before the program runs (or, for its imported modules, before anything is
    written): nothing of the user's is replaced, no shapes file is left that capture refuses."""
    import_or_skip("torch")
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


def test_paths_follow_the_running_parents_and_parameters_in_ops_count() -> None:
    """A submodule shared by two parents is named under the one that called it; addmm with a
    parameter bias (GPT-2's Conv1D) is inference; sort's tuple result is counted."""
    torch = import_or_skip("torch")
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
    document = recorder.shapes_document("test")
    linear = {stage: s[0]["source"] for stage, s in document["stages"].items()}
    assert linear["encoder"] == "net.enc.*" and linear["decoder"] == "net.dec.*"
    head = document["stages"]["net"][0]
    assert (head["op"], head["M"], head["N"], head["K"], head["bias"]) == ("linear", 4, 6, 8, True)
    assert document["recorded"]["unreplayable"] == {"Tensor.sort": 1}


def test_stage_names_stay_text_in_yaml(tmp_path: Path) -> None:
    import_or_skip("torch")
    script = tmp_path / "p.py"
    script.write_text(
        "import torch\ntorch.nn.functional.linear(torch.randn(4, 8), torch.randn(2, 8))\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--stage", "=null", "--", "python", str(script)]) == 0
    assert list(load_shapes(out).stages) == ["null"]


# --- every other device op, at the dispatch level ------------------------------------------


def _ops(recorded: dict, stage: str) -> list:
    return [op for op in recorded["recorded"].ops if op.stage == stage]


def test_ops_the_typed_shapes_stand_for_are_not_listed_again(recorded: dict) -> None:
    """linear -> addmm, conv3d/conv2d -> convolution, attention -> its SDPA kernel: the typed
    shapes stand for them; a view is no work."""
    names = {op.op for op in recorded["recorded"].ops}
    assert not {n for n in names if n.split(".")[1] in ("addmm", "mm", "bmm", "convolution")}
    assert not {n for n in names if "scaled_dot_product" in n}
    assert not {n for n in names if n.split(".")[1] in ("view", "permute", "transpose", "expand")}


def test_the_vae_norm_on_a_strided_view_is_listed_with_its_strides(recorded: dict) -> None:
    """After the 2-D upsampling the frames come back as a permuted view: the RMS norm's
    vector norm, division, scale and SiLU run on it (strided kernels)."""
    wanted = "vae:aten.linalg_vector_norm.default:1x192x4x32x32:fp32:strided"
    [norm] = [op for op in _ops(recorded, "vae") if op.id == wanted]
    tensor = norm.args[0]["tensor"]
    assert tensor["shape"] == [1, 192, 4, 32, 32] and tensor["dtype"] == "float32"
    assert tensor["strides"] != [786432, 4096, 1024, 32, 1]  # not the contiguous strides
    assert norm.source == "vae.decoder.up_blocks.*.resnets.*.norm1"
    divide = [op for op in _ops(recorded, "vae")
              if op.id == "vae:aten.div.Tensor:1x192x4x32x32:fp32:strided:broadcast"]  # fmt: skip
    assert len(divide) == 1 and divide[0].args[1]["tensor"]["strides"][1] == 0  # the norm, expanded


def test_list_inplace_index_and_reduction_ops_are_listed(recorded: dict) -> None:
    ops = recorded["recorded"].ops
    stacks = [op for op in ops if op.op == "aten.stack.default"]
    assert stacks and all(isinstance(op.args[0], list) and len(op.args[0]) >= 2 for op in stacks)
    cats = [op for op in ops if op.op == "aten.cat.default"]
    assert len(cats) == 13 and all("tensor" in t for op in cats for t in op.args[0])
    assert {op.op for op in ops} >= {"aten.copy_.default", "aten.add_.Scalar", "aten.mean.dim"}
    assert sum(op.calls for op in ops) == 771 and len(ops) == 211
    assert len({op.id for op in ops}) == len(ops)  # ids are unique


def test_an_index_op_and_a_non_finite_scalar_survive_the_shapes_file(tmp_path: Path) -> None:
    """x[idx] records aten.index.Tensor with its int64 index; masked_fill(-inf) keeps the
    -inf (JSON and YAML have no such number); the file reads back with the same ops."""
    import_or_skip("torch")
    script = tmp_path / "prog.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(8, 4)\n"
        "idx = torch.tensor([3, 1, 2])\n"
        "for _ in range(3):\n"
        "    y = x[idx].masked_fill(x[idx] > 0, float('-inf')).sum()\n"
        "    z = torch.nn.functional.linear(x, torch.ones(4, 4))\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 0
    ops = {op.op: op for op in load_shapes(out).recorded.ops}  # type: ignore[union-attr]
    index = ops["aten.index.Tensor"]
    assert index.calls == 6 and index.args[1][0]["tensor"]["dtype"] == "int64"
    assert ops["aten.masked_fill.Scalar"].args[2] == {"float": "-inf"}
    assert "aten.mm.default" not in ops and "aten.ones.default" in ops  # F.linear is a shape


def test_an_op_that_takes_and_makes_no_tensor_is_no_device_work() -> None:
    """On the H200 the recording listed `torchvision._cuda_version` and two torchaudio probes
    (dispatched at import, returning ints): no device work, and not replayable."""
    torch = import_or_skip("torch")
    from ncu_classify.record.device_ops import touches_tensors

    assert not touches_tensors((), {}, 12080)
    assert touches_tensors(([4, 64],), {"device": None}, torch.zeros(1))  # a factory
    assert touches_tensors(([torch.zeros(1), torch.zeros(1)],), {}, torch.zeros(2))  # cat
    assert touches_tensors((torch.zeros(2),), {}, 2)  # reads a tensor (a reduction to int)


def test_distinct_ops_beyond_the_cap_are_counted_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program whose shapes never repeat: the first MAX_DISTINCT ops are listed whole, the
    calls of the others counted by op name under recorded.unreplayable."""
    import_or_skip("torch")
    from ncu_classify.record import device_ops

    monkeypatch.setattr(device_ops, "MAX_DISTINCT", 3)
    script = tmp_path / "grow.py"
    script.write_text(
        "import torch\nw = torch.ones(2, 2)\ntorch.nn.functional.linear(torch.ones(2, 2), w)\n"
        "for n in range(1, 7):\n    torch.ones(n).neg()\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 0
    recorded = load_shapes(out).recorded
    assert recorded is not None and len(recorded.ops) == 3
    # kept: ones([2, 2]) (2 calls), then ones([1]) and its neg; the 5 other sizes are not
    assert sum(op.calls for op in recorded.ops) == 4
    beyond = {k: v for k, v in recorded.unreplayable.items() if "beyond the 3" in k}
    assert beyond == {
        "aten.ones.default (a distinct call beyond the 3 recorded.ops keeps)": 5,
        "aten.neg.default (a distinct call beyond the 3 recorded.ops keeps)": 5,
    }
