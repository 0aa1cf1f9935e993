"""Compiled regions (issue 40), on the CPU (Inductor compiles for it): a torch.compile'd module
or function recorded as it runs, compiled (the recorder's modes set aside), each graph dynamo
compiled a `compiled` shape with its ATen ops, replayed compiled to the same numbers; graph
breaks and recompiles said, the code between a region's graphs named uncovered work."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import import_or_skip, inductor_code, inductor_kernels

torch = import_or_skip("torch")

import torch.nn.functional as F  # noqa: E402

from ncu_classify.record.document import shapes_yaml, validated_document  # noqa: E402
from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.shapes.chain_shape import CompiledShape  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402


class Block(torch.nn.Module):
    """A causal-VAE-like residual block: group norm -> SiLU -> conv3d, plus the input."""

    def __init__(self, broken: bool = False) -> None:
        super().__init__()
        self.norm = torch.nn.GroupNorm(4, 8)
        self.conv = torch.nn.Conv3d(8, 8, 3, padding=1)
        self.broken = broken

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(F.silu(self.norm(x)))
        if self.broken:
            torch._dynamo.graph_break()
            h = h * 2
        return x + h


class Net(torch.nn.Module):
    def __init__(self, broken: bool = False) -> None:
        super().__init__()
        self.inp, self.block, self.out = (
            torch.nn.Conv3d(4, 8, 1), Block(broken), torch.nn.Conv3d(8, 4, 1)
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.block(self.inp(x)))


def _record(tmp_path: Path, net: Net, *shapes: tuple[int, ...], how: str = "in_place") -> Path:
    """Record `net` with its block compiled inside the recording, one call per input shape."""
    torch._dynamo.reset()
    recorder = Recorder(roots={"net": net})
    with recorder, torch.no_grad():
        if how == "in_place":
            net.block.compile()
        else:
            net.block = torch.compile(net.block)
        for shape in shapes:
            net(torch.randn(*shape))
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    return path


@pytest.mark.parametrize("how", ["in_place", "wrapper"])
def test_a_compiled_module_is_one_compiled_shape(tmp_path: Path, how: str) -> None:
    """`block.compile()` or `torch.compile(block)`: the block ran compiled, and is one shape of
    kind `compiled` holding its four ATen ops; none of them is recorded on its own."""
    torch.manual_seed(0)
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    shapes = load_shapes(_record(tmp_path, Net().eval(), (1, 4, 3, 6, 6), (1, 4, 3, 6, 6), how=how))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == before + 1
    net = shapes.stages["net"]
    (region,) = [s for s in net if isinstance(s, CompiledShape)]
    assert (region.region, region.graph, region.backend, region.compile) == (
        "net.block",
        0,
        "inductor",
        "default",
    )
    assert (region.calls, region.compile_id) == (2, "0/0")
    assert [op.overload for op in region.chain.ops] == [
        "aten.native_group_norm.default", "aten.silu.default", "aten.convolution.default",
        "aten.add.Tensor",
    ]  # fmt: skip
    assert [s.op for s in net] == ["conv3d", "compiled", "conv3d"]  # the block's ops: inside
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    notes = shapes.recorded.compiled
    assert (notes.regions, notes.graphs, notes.recompiles, notes.graph_breaks) == (
        ["net:net.block"],
        1,
        0,
        {},
    )


def test_a_compiled_shape_replays_compiled_to_the_block_s_numbers(tmp_path: Path) -> None:
    """Capture's replay of the region (chain_runner, Inductor on the CPU): on the drawn inputs
    (the norm's weight and bias, the input, the conv's weight and bias, as dynamo lifted them)
    its output is the block's own computation."""
    from ncu_classify.replay.chain import chain_runner

    torch.manual_seed(0)
    shapes = load_shapes(_record(tmp_path, Net().eval(), (1, 4, 3, 6, 6)))
    (region,) = [s for s in shapes.stages["net"] if isinstance(s, CompiledShape)]
    run, inputs = chain_runner(region.chain, "compile", "cpu")
    gamma, beta, x, weight, bias = inputs
    expected = x + F.conv3d(F.silu(F.group_norm(x, 4, gamma, beta)), weight, bias, padding=1)
    (out,) = run()
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


def test_a_graph_break_and_a_recompile_are_said(tmp_path: Path) -> None:
    """A block that breaks its graph: two graphs, dynamo's reason counted, and the code between
    them named uncovered work (on the CPU, untimed: the calls); a second input shape compiles
    the frames again (recompiles, compile ids `N/1`)."""
    torch.manual_seed(0)
    shapes = load_shapes(
        _record(tmp_path, Net(broken=True).eval(), (1, 4, 3, 6, 6), (1, 4, 3, 6, 7))
    )
    regions = [s for s in shapes.stages["net"] if isinstance(s, CompiledShape)]
    assert len(regions) >= 3 and all(r.region == "net.block" for r in regions)
    assert [r.graph for r in regions] == list(range(len(regions)))
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    notes = shapes.recorded.compiled
    assert notes.recompiles >= 1 and any(
        r.compile_id.endswith("/1") for r in regions if r.compile_id
    )
    (reason,) = notes.graph_breaks
    assert "graph_break()" in reason and notes.graph_breaks[reason] >= 2
    assert shapes.recorded.totals is not None
    (eager,) = shapes.recorded.totals.uncovered
    assert eager.name == "(code run eagerly between the graphs of compiled region net.block)"
    assert "graph break" in eager.why and eager.calls == 2


PROGRAM = """
import torch, torch.nn.functional as F

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.conv = torch.nn.GroupNorm(4, 8), torch.nn.Conv3d(8, 8, 3, padding=1)

    def forward(self, x):
        return x + self.conv(F.silu(self.norm(x)))

@torch.compile
def to_pixels(y):
    return (y * 127.5 + 127.5).clamp(0, 255)

torch.manual_seed(0)
block = torch.compile(Block().eval())
with torch.no_grad():
    for _ in range(3):
        frames = to_pixels(F.silu(block(torch.randn(1, 8, 3, 6, 6))))
"""


def test_record_a_compiled_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`record` of a program that compiles a module (`torch.compile(block)`) and a function
    (`@torch.compile`): two regions named as the program holds them (the module is its own
    stage, `block`), each one graph of 3 calls; the noise and the SiLU between the regions
    are the ops recorded on their own; the summary line says the regions, and counts them
    as compiled shapes."""
    from ncu_classify.cli.entry import run

    script = tmp_path / "compiled.py"
    script.write_text(PROGRAM)
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 0
    line = capsys.readouterr().out
    assert "compiled: 2 regions, 2 graphs, 0 recompiles, 0 graph breaks (recorded.compiled)" in line
    # the regions are said as compiled shapes, not typed ones (it was "(2 typed, 2 device ops")
    assert line.startswith("recorded 4 shapes (0 typed, 2 compiled, 2 device ops; 12 calls) in")
    header = out.read_text().splitlines()[0]
    assert ": 4 distinct shapes (0 typed, 2 compiled, 2 device ops), 12 calls;" in header
    shapes = load_shapes(out)
    got = {
        stage: [(s.op, getattr(s, "region", s.name), s.calls) for s in members]
        for stage, members in shapes.stages.items()
    }
    assert got == {
        "block": [("compiled", "block", 3)],
        "main": [
            ("compiled", "to_pixels", 3),
            ("aten", "aten.randn.default", 3),
            ("aten", "aten.silu.default:1x8x3x6x6:fp32", 3),
        ],
    }
    assert shapes.recorded is not None and shapes.recorded.totals is not None
    assert shapes.recorded.totals.uncovered == []


def test_a_graph_s_first_call_is_compile_time_work(tmp_path: Path) -> None:
    """On a GPU a compiled graph's first call launches Inductor's tuning benchmarks (the H200
    block: 178.7 ms recorded for 3 calls against 10.2 ms steady): its time joins model building
    (`setup`), and the graph's time per call is its other calls'. A graph called once keeps
    its one call's time. (Synthetic times: the arithmetic of `Regions.settle`.)"""
    from ncu_classify.record.timing import KernelTime

    torch.manual_seed(0)
    net = Net().eval()
    recorder = Recorder(roots={"net": net})
    with recorder, torch.no_grad():
        net.block.compile()
        for _ in range(3):
            net(torch.randn(1, 4, 3, 6, 6))
    (graph,) = recorder.regions.graphs
    times = {
        ("first", graph.key): KernelTime(kernels=120, ns=170_000_000, names={"tune": 120}),
        ("shape", graph.key): KernelTime(kernels=26, ns=6_800_000, names={"triton_a": 26}),
        ("setup",): KernelTime(kernels=1, ns=1_000),
    }
    recorder.regions.settle(times)
    assert ("first", graph.key) not in times
    assert (times[("setup",)].kernels, times[("setup",)].ns) == (121, 170_001_000)
    steady = times[("shape", graph.key)]
    assert (steady.kernels, steady.ns, steady.names) == (39, 10_200_000, {"triton_a": 39})
    once = {("first", graph.key): KernelTime(kernels=5, ns=500)}
    recorder.recording.entries[graph.key].calls = 1
    recorder.regions.settle(once)
    assert once[("shape", graph.key)].ns == 500


def test_a_region_replays_with_the_program_s_inductor_options(tmp_path: Path) -> None:
    """`torch.compile(block, options={...})`: the shape keeps the options (plain values), and
    the replay compiles with them, CUDA graphs off (ncu profiles kernels, not graph launches)."""
    from ncu_classify.replay.chain import chain_runner, replay_mode

    torch._dynamo.reset()
    torch.manual_seed(0)
    net = Net().eval()
    recorder = Recorder(roots={"net": net})
    with recorder, torch.no_grad():
        net.block = torch.compile(
            net.block, options={"max_autotune": False, "epilogue_fusion": True}
        )
        net(torch.randn(1, 4, 3, 6, 6))
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    (region,) = [s for s in load_shapes(path).stages["net"] if isinstance(s, CompiledShape)]
    assert region.options == {"epilogue_fusion": True, "max_autotune": False}
    how = replay_mode(region)
    assert how == {"epilogue_fusion": True, "max_autotune": False, "triton.cudagraphs": False}
    run, _ = chain_runner(region.chain, "compile", "cpu", compile_mode=how)
    assert list(run()[0].shape) == [1, 8, 3, 6, 6]


def test_a_graph_reading_a_changing_float_is_traced_with_its_compile_time_value(
    tmp_path: Path,
) -> None:
    """A float argument that changes recompiles the function with the float as a 0-d host
    tensor read by `.item()` (fake tensors have no value for it): the graph multiplies by that
    tensor, as the program's Inductor made it (its kernel reads the float as an argument), an
    input on the host holding the value the program compiled it with (2.5), so it is a shape
    with its 2 calls, not uncovered."""
    from ncu_classify.cli.entry import run

    script = tmp_path / "floats.py"
    script.write_text(
        "import torch\n@torch.compile\ndef scal(x, n: int, f: float):\n    return x * f + n\n"
        "with torch.no_grad():\n    for f in (1.5, 2.5, 3.5):\n"
        "        scal(torch.randn(3, 4), 3, f)\n"
    )
    out = tmp_path / "s.yaml"
    assert run(["record", "-o", str(out), "--", "python", str(script)]) == 0
    shapes = load_shapes(out)
    regions = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    assert [(r.region, r.graph, r.calls) for r in regions] == [("scal", 0, 1), ("scal", 1, 2)]
    muls = [op.args for op in regions[1].chain.ops if op.overload == "aten.mul.Tensor"]
    assert muls == [[{"input": 0}, {"input": 1}]]
    scalar = regions[1].chain.inputs[1]
    assert (scalar.value, scalar.tensor.shape, scalar.tensor.device) == (2.5, [], "cpu")
    assert shapes.recorded is not None and shapes.recorded.totals is not None
    assert shapes.recorded.totals.uncovered == []


class Scaled(torch.nn.Module):
    """An RMS norm with a Python float scale (as the Wan VAE's): under dynamic shapes dynamo
    lifts the float into a one-element tensor input the graph reads with `.item()`."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 8**0.5
        self.conv = torch.nn.Conv3d(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.normalize(x, dim=1) * self.scale)


def test_a_dynamic_graph_reading_a_lifted_float_is_traced_with_its_value(tmp_path: Path) -> None:
    """`torch.compile(dynamic=True)` of a block reading a float attribute (the H200's Wan
    decode, recompiled with dynamic sizes, left 7 such graphs "not traced": fake tensors have
    no value for `.item()`): the region is one compiled shape whose chain multiplies by its
    host input holding 8 ** 0.5, and its replay gives the block's numbers."""
    from ncu_classify.replay.chain import chain_runner

    torch._dynamo.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(Scaled()).eval()
    recorder = Recorder(roots={"net": net})
    with recorder, torch.no_grad():
        net[0] = torch.compile(net[0], dynamic=True)
        net(torch.randn(1, 8, 2, 4, 4))
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    shapes = load_shapes(path)
    assert shapes.recorded is not None and shapes.recorded.totals is not None
    assert shapes.recorded.totals.uncovered == []
    (region,) = [s for s in shapes.stages["net"] if isinstance(s, CompiledShape)]
    muls = [op for op in region.chain.ops if op.overload == "aten.mul.Tensor"]
    (scale,) = [op.args[1]["input"] for op in muls]
    assert region.chain.inputs[scale].value == 8**0.5
    run, inputs = chain_runner(region.chain, "compile", "cpu")
    x, weight, bias = (t for t in inputs if t.dim() > 0)
    (out,) = run()
    expected = F.conv3d(F.normalize(x, dim=1) * 8**0.5, weight, bias)
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


def _on_the_gpu(size: int) -> torch.Tensor:
    """A tensor whose device is CUDA on a machine without one (a fake tensor)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.empty(size, device="cuda")


def test_the_device_is_learned_from_a_factory_or_a_region_s_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program whose only eager ops are factories (`torch.randn(device="cuda")`) and whose
    models are compiled: no eager op takes a tensor, so the device was learned from none and the
    H200 recording of such a block (`block.compile()`) was untimed, `device: cpu`, its eager
    code unseen. The factory's result, or the region's arguments, tell it now."""
    from ncu_classify.record.recorder import Recorder

    factory = Recorder()
    made = _on_the_gpu(2)
    factory.observe(torch.empty, (2,), {"device": "cuda"}, made)
    assert factory.recording.device == "cuda"
    factory.learn_device([torch.ones(1)])  # (learned once: a later CPU tensor changes nothing)
    assert factory.recording.device == "cuda"
    torch._dynamo.reset()
    region, seen = Recorder(), []
    learn = region.learn_device
    monkeypatch.setattr(region, "learn_device", lambda values: [seen.extend(values), learn([])])
    x = torch.ones(4)
    with region, torch.no_grad():
        torch.compile(lambda x: x * 2 + 1, backend="eager")(x)
    assert any(v is x for v in seen)  # (the region's argument: no eager op saw it)


def test_a_meta_placeholder_is_not_the_program_s_device() -> None:
    """A program that makes a tensor on `meta` (a placeholder: its shape alone, say) before its
    first GPU tensor ran on the GPU, not on `meta` (its recording said `device: meta`)."""
    from ncu_classify.record.recorder import Recorder

    recorder = Recorder()
    placeholder = torch.empty(2, device="meta")
    recorder.observe(torch.empty, (2,), {"device": "meta"}, placeholder)
    recorder.observe(torch.empty_like, (placeholder,), {"device": "cpu"}, torch.empty(2))
    assert recorder.recording.device == "cpu"
    recorder.learn_device([_on_the_gpu(2)])
    assert recorder.recording.device == "cuda"


class ScaledBlock(torch.nn.Module):
    """The Wan VAE's residual step: RMS norm (a float scale) -> SiLU -> causal pad -> conv3d,
    plus the cache slice cloned as an output; `fn` is the step, compiled in the recording."""

    def __init__(self) -> None:
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(8, 1, 1, 1))
        self.conv = torch.nn.Conv3d(8, 8, 3)
        self.fn: object = None

    def forward(self, x: torch.Tensor, scale: float) -> object:
        assert callable(self.fn)
        return self.fn(x, self.gamma, self.conv.weight, self.conv.bias, scale)


def _step(x: torch.Tensor, gamma: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
          scale: float) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """RMS norm -> SiLU -> causal pad -> conv3d; the last 2 frames cloned (the cache)."""
    cache = x[:, :, -2:].clone()
    h = F.pad(F.silu(F.normalize(x, dim=1) * scale * gamma), (1, 1, 1, 1, 2, 0))
    return F.conv3d(h, weight, bias), cache


def test_a_lifted_float_replays_the_kernels_the_program_compiled(tmp_path: Path) -> None:
    """A step whose float scale changed between calls, so that dynamo lifted the float into a
    0-d host tensor the graph reads with `.item()`: the replay compiles the very kernels the
    program's Inductor generated (which read the float as an argument, as Inductor makes
    arithmetic on it tensor ops), not ones with the float as a constant (the H200's Wan
    decode, so replayed: other Triton kernels than the program's in 13 of 21 graphs)."""
    from ncu_classify.replay.chain import chain_runner

    torch._dynamo.reset()
    torch.manual_seed(0)
    net = ScaledBlock().eval()
    recorder = Recorder(roots={"net": net})
    program: list[str] = []
    with inductor_code(program), recorder, torch.no_grad():
        net.fn = torch.compile(_step)
        for scale in (8**0.5, 16**0.5):  # the second call: a graph reading a host float
            net(torch.randn(1, 8, 2, 6, 6), scale)
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    regions = [s for s in load_shapes(path).stages["net"] if isinstance(s, CompiledShape)]
    assert [r.graph for r in regions] == [0, 1] and len(program) == 2
    lifted = [i for i in regions[1].chain.inputs if i.value is not None]
    assert [(i.value, i.tensor.dtype, i.tensor.device) for i in lifted] == [
        (16**0.5, "float64", "cpu")
    ]
    replayed: list[str] = []
    with inductor_code(replayed):
        for region in regions:
            chain_runner(region.chain, "compile", "cpu").run()
    assert len(replayed) == 2
    for ran, again in zip(program, replayed, strict=True):
        assert inductor_kernels(ran) and inductor_kernels(again) == inductor_kernels(ran)
