"""Chains (issue 39): record keeps the dataflow, so the device ops between two heavy ops are
rebuilt as one chain (ops in order, each tensor an input or an earlier op's output), identical
chains merge with their calls, the chains are written into the shapes file and read back, and
a chain replays eagerly and compiled (Inductor, on the CPU) as the model computed it. What the
recorder could not tie together is listed with why."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

import torch.nn.functional as F  # noqa: E402

from ncu_classify.record.document import shapes_yaml, validated_document  # noqa: E402
from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.shapes.chains import Chain  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402

CONV_IN = "net:conv3d:in1x4x3x6x6_w8x4x1x1x1_s1x1x1_p0x0x0:fp32:tf32:bias"
CONV = "net:conv3d:in1x8x5x8x8_w8x8x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
SPEC = {"shape": [1, 8, 3, 6, 6], "dtype": "float32", "strides": [864, 108, 36, 6, 1], "offset": 0}
PARAM = {"shape": [8], "dtype": "float32", "strides": [1], "offset": 0}


class Block(torch.nn.Module):
    """A VAE-like residual block: group norm -> SiLU -> pad -> conv3d, plus the input."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.GroupNorm(4, 8)
        self.conv = torch.nn.Conv3d(8, 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.norm(x))
        return x + self.conv(F.pad(h, (1, 1, 1, 1, 1, 1)))


class Net(torch.nn.Module):
    """conv_in, then three blocks: block n's residual add runs before block n+1's norm."""

    def __init__(self) -> None:
        super().__init__()
        self.conv_in = torch.nn.Conv3d(4, 8, 1)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_in(x)
        for block in self.blocks:
            h = block(h)
        return h


def _record(model: torch.nn.Module, *inputs: torch.Tensor, chains: bool = True) -> str:
    torch.manual_seed(0)
    recorder = Recorder(roots={"net": model}, chains=chains)
    with recorder, torch.no_grad():
        model(*inputs)
    return shapes_yaml(validated_document(recorder, "test"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    torch.manual_seed(0)
    text = _record(Net().eval(), torch.randn(1, 4, 3, 6, 6))
    path = tmp_path_factory.mktemp("chains") / "net.yaml"
    path.write_text(text)
    return text, path


def test_the_chain_between_two_convs_with_its_dataflow(recorded: tuple[str, Path]) -> None:
    """Between a block's conv and the next block's conv: the residual add, the group norm,
    SiLU and the pad, each reading the op before; twice (blocks 0->1 and 1->2), merged."""
    chains = load_shapes(recorded[1]).chains["net"]
    assert [(c.name, c.calls) for c in chains] == [
        ("net:chain:native_group_norm+silu+constant_pad_nd:1x8x3x6x6:fp32", 1),
        ("net:chain:add+native_group_norm+silu+constant_pad_nd:1x8x3x6x6:fp32", 2),
    ]
    chain = chains[1]
    assert [op.overload for op in chain.ops] == [
        "aten.add.Tensor",
        "aten.native_group_norm.default",
        "aten.silu.default",
        "aten.constant_pad_nd.default",
    ]
    assert [op.args for op in chain.ops] == [
        [{"input": 0}, {"input": 1}],
        [{"ref": [0, 0]}, {"input": 2}, {"input": 3}, 1, 8, 108, 4, 1e-05],
        [{"ref": [1, 0]}],
        [{"ref": [2, 0]}, [1, 1, 1, 1, 1, 1], 0.0],
    ]
    assert [i.tensor.model_dump(exclude_none=True) for i in chain.inputs] == [SPEC, SPEC] + [
        PARAM
    ] * 2
    # the residual: conv_in's output for block 0, the previous chain's add for block 1
    assert [i.origins for i in chain.inputs] == [
        [CONV_IN, f"{chain.name} op 0"],
        [CONV],
        ["parameter"],
        ["parameter"],
    ]
    assert (chain.after, chain.before, chain.source) == ([CONV_IN, CONV], [CONV], "net.blocks")
    # the add leaves (the next residual) and so does the pad (the conv reads it)
    assert [o.ref for o in chain.outputs] == [[0, 0], [3, 0]]
    assert chain.ops[2].shape == "net:aten.silu.default:1x8x3x6x6:fp32"
    assert chain.untied == [] and chain.real_us is None


def test_the_chains_are_read_back_and_written_again_byte_for_byte(
    recorded: tuple[str, Path],
) -> None:
    from ruamel.yaml import YAML

    from ncu_classify.record.shapes_document import ShapesDocument
    from ncu_classify.shapes.recorded import Recorded

    text, path = recorded
    data = json.loads(json.dumps(YAML(typ="safe").load(text)))
    chains = {s: [Chain.model_validate(c) for c in items] for s, items in data["chains"].items()}
    loaded = load_shapes(path)
    assert chains == loaded.chains
    # capture replays the shapes alone: the chains' ops are not counted twice
    assert [e.group for e in loaded.entries()] == [
        e.group for e in load_shapes(_without_chains(text, path)).entries()
    ]
    recorded_block = Recorded.model_validate(data["recorded"])
    again = ShapesDocument(recorded=recorded_block, stages=loaded.stages, chains=chains)
    assert shapes_yaml(again) == text


def _without_chains(text: str, path: Path) -> Path:
    """The shapes file less its chains section, beside it."""
    bare = path.with_name("bare.yaml")
    bare.write_text(text.split("chains:\n", 1)[0])
    return bare


def test_without_chains_the_file_is_the_same_but_the_section() -> None:
    """Recording with the dataflow changes nothing in the file but the added section, which
    is the same from one recording to the next."""
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(1, 4, 3, 6, 6)
    with_chains, without = _record(net, x), _record(net, x, chains=False)
    assert "\nchains:\n" not in without
    assert with_chains.split("chains:\n", 1)[0] == without
    assert _record(net, x) == with_chains  # deterministic


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_a_chain_replays_as_the_model_computes_it(recorded: tuple[str, Path], mode: str) -> None:
    """The merged chain as one function on the CPU, on seeded inputs: its outputs are the
    block's own computation on them (eager: to the bit; compiled by Inductor: fp32 rounding)."""
    from ncu_classify.replay.chain import chain_runner

    chain = load_shapes(recorded[1]).chains["net"][1]
    run, inputs = chain_runner(chain, mode, "cpu")  # type: ignore[arg-type]
    outputs = run()
    conv_out, residual, weight, bias = inputs
    added = conv_out + residual
    expected = F.pad(F.silu(F.group_norm(added, 4, weight, bias)), (1, 1, 1, 1, 1, 1))
    assert [list(o.shape) for o in outputs] == [[1, 8, 3, 6, 6], [1, 8, 5, 8, 8]]
    tolerance = {"atol": 0.0, "rtol": 0.0} if mode == "eager" else {"atol": 1e-5, "rtol": 1e-5}
    torch.testing.assert_close(outputs[0], added, **tolerance)
    torch.testing.assert_close(outputs[1], expected, **tolerance)
    assert float(outputs[1].abs().sum()) > 100  # not zeros: the drawn inputs are normal


class Scaled(torch.nn.Module):
    """conv -> (x * TABLE + 1) -> SiLU -> conv, TABLE coming from where record cannot see."""

    def __init__(self, table: object) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(2, 2, 1)
        self.b = torch.nn.Conv2d(2, 2, 1)
        self.table = table

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = self.table() if callable(self.table) else self.table
        return self.b(F.silu(self.a(x) * table + 1))


def _from_a_thread() -> torch.Tensor:
    made: list[torch.Tensor] = []
    worker = threading.Thread(target=lambda: made.append(torch.ones(1, 2, 4, 4) * 3))
    worker.start()
    worker.join()
    return made[0]


@pytest.mark.parametrize(
    ("table", "origin", "why"),
    [
        (torch.full((1, 2, 4, 4), 2.0), "unknown", "of unknown origin: no recorded op made it"),
        (_from_a_thread, "another thread", "made in another thread (record sees only"),
    ],
    ids=["made-before-the-recording", "made-in-another-thread"],
)
def test_a_chain_with_an_input_of_unknown_origin_is_listed_with_why(
    tmp_path: Path, table: object, origin: str, why: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(_record(Scaled(table), torch.randn(1, 2, 4, 4)))
    (chain,) = load_shapes(path).chains["net"]
    assert [op.overload for op in chain.ops] == [
        "aten.mul.Tensor",
        "aten.add.Tensor",
        "aten.silu.default",
    ]
    assert len(chain.untied) == 1 and chain.untied[0].startswith(f"input 1: {why}")
    assert chain.inputs[1].origins == [origin]


def test_a_data_dependent_op_unties_its_chain_and_is_not_replayed(tmp_path: Path) -> None:
    from ncu_classify.replay.aten import NotReplayable
    from ncu_classify.replay.chain import chain_runner

    class Masked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = F.silu(self.a(x))
            return self.b(torch.nonzero(h > 0).float()[:, :1].expand(-1, 4).contiguous())

    path = tmp_path / "s.yaml"
    path.write_text(_record(Masked(), torch.randn(3, 4)))
    (chain,) = load_shapes(path).chains["net"]
    assert any("nonzero" in why and "depends on the values" in why for why in chain.untied)
    with pytest.raises(NotReplayable, match="depends on the values"):
        chain_runner(chain, "eager", "cpu")


def test_a_chain_link_to_a_later_op_is_refused_with_its_place() -> None:
    from pydantic import ValidationError

    op = {"overload": "aten.silu.default", "args": [{"ref": [1, 0]}], "outputs": [PARAM]}
    bad = {"name": "s:chain:x", "calls": 1, "inputs": [], "ops": [op, op]}
    with pytest.raises(ValidationError, match=r"ops.0: ref \[1, 0\] names no earlier op"):
        Chain.model_validate(bad)
    tensor = {**op, "args": [{"tensor": PARAM}]}
    with pytest.raises(ValidationError, match="a chain's tensor is an input"):
        Chain.model_validate({**bad, "ops": [tensor]})


def test_two_parameters_of_one_layout_are_two_inputs(tmp_path: Path) -> None:
    """Inputs by name (parameters here) are told apart by tensor, not by layout."""

    class Affine(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
            self.scale = torch.nn.Parameter(torch.full((4,), 2.0))
            self.shift = torch.nn.Parameter(torch.full((4,), 3.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b((self.a(x) * self.scale + self.shift) * self.scale)

    path = tmp_path / "s.yaml"
    path.write_text(_record(Affine(), torch.randn(3, 4)))
    (chain,) = load_shapes(path).chains["net"]
    assert [op.args for op in chain.ops] == [
        [{"input": 0}, {"input": 1}],
        [{"ref": [0, 0]}, {"input": 2}],
        [{"ref": [1, 0]}, {"input": 1}],
    ]
    assert [i.origins for i in chain.inputs] == [[chain.after[0]], ["parameter"], ["parameter"]]


def test_a_program_input_given_by_keyword_is_tied(tmp_path: Path) -> None:
    """A tensor made before the recording and handed to the top module, by position or by
    keyword, is a program input: the chain that reads it is tied."""

    class Keyword(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, *, gate: torch.Tensor) -> torch.Tensor:
            return self.b(F.silu(self.a(x) * gate + 1))

    model, path = Keyword(), tmp_path / "s.yaml"
    x, gate = torch.randn(3, 4), torch.randn(3, 4)  # (made before the recording)
    recorder = Recorder(roots={"net": model})
    with recorder, torch.no_grad():
        model(x, gate=gate)
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    (chain,) = load_shapes(path).chains["net"]
    assert chain.untied == [] and chain.inputs[1].origins == ["program input"]


def test_a_view_read_after_an_in_place_write_is_rebuilt_from_the_writer(tmp_path: Path) -> None:
    """A view made before an in-place write reads what the write made: found by its storage,
    rebuilt from the writer's output by `as_strided`; the replay computes what the model did."""
    from ncu_classify.replay.chain import chain_runner

    class InPlace(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = F.silu(self.a(x))
            view = h.view(3, 2, 4)
            h.mul_(2.0)
            return self.b((view + 1).view(3, 8))

    path = tmp_path / "s.yaml"
    path.write_text(_record(InPlace(), torch.randn(3, 4)))
    (chain,) = load_shapes(path).chains["net"]
    assert [(op.overload, op.args[0]) for op in chain.ops] == [
        ("aten.silu.default", {"input": 0}),
        ("aten.view.default", {"ref": [0, 0]}),
        ("aten.mul_.Tensor", {"ref": [0, 0]}),
        ("aten.add.Tensor", {"ref": [2, 0], "as_strided": {
            "shape": [3, 2, 4], "strides": [8, 4, 1], "offset": 0}}),
        ("aten.view.default", {"ref": [3, 0]}),
    ]  # fmt: skip
    run, inputs = chain_runner(chain, "eager", "cpu")
    expected = (F.silu(inputs[0]) * 2.0 + 1).view(3, 8)
    torch.testing.assert_close(run()[-1], expected, atol=0.0, rtol=0.0)


def test_a_dataflow_that_fails_stops_says_so_and_the_recording_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of the dataflow's own never breaks the program or the shapes: the chains
    found before it are kept, and one entry says where and why it stopped."""
    from ncu_classify.record.dataflow import Dataflow

    closing = Dataflow.close
    calls = [0]

    def close(self: Dataflow, heavy: str | None, setup: bool) -> None:
        calls[0] += heavy is not None
        if calls[0] == 3:  # block 1's conv: the chain before block 0's conv was closed
            raise RuntimeError("a bug of the dataflow")
        closing(self, heavy, setup)

    monkeypatch.setattr(Dataflow, "close", close)
    torch.manual_seed(0)
    net, x = Net().eval(), torch.randn(1, 4, 3, 6, 6)
    path = tmp_path / "s.yaml"
    text = _record(net, x)
    path.write_text(text)
    chains = load_shapes(path).chains["net"]
    assert [c.name for c in chains[:-1]] == [
        "net:chain:native_group_norm+silu+constant_pad_nd:1x8x3x6x6:fp32"
    ]
    assert [(c.name, c.calls, c.untied) for c in chains[-1:]] == [
        (
            "net:chain:dataflow-stopped",
            1,
            ["the dataflow stopped here (close: RuntimeError: a bug of the dataflow): later"
             " chains are not kept"],
        )
    ]  # fmt: skip
    assert text.split("chains:\n", 1)[0] == _record(net, x, chains=False)


def test_the_wan_vae_chains_of_residual_add_norm_silu_pad(wan_recording: Path) -> None:
    """diffusers' Wan VAE (the small recording of tests/record): between two causal convs of
    its up blocks, the residual add, the RMS norm, SiLU, the frame cache's slice and clone and
    the causal pad, in one chain, three times (one per frame's block boundary); every chain of
    the recording tied together; the chain replays compiled as it does eagerly."""
    from ncu_classify.replay.chain import chain_runner

    conv = "vae:conv3d:in1x384x3x10x10_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    chains = load_shapes(wan_recording).chains
    assert [c.name for s in chains.values() for c in s if c.untied] == []
    (chain,) = [
        c for c in chains["vae"]
        if c.name == "vae:chain:add+linalg_vector_norm+clamp_min+7more:1x384x1x8x8:fp32"
    ]  # fmt: skip
    assert [op.overload.split(".")[1] for op in chain.ops] == [
        "add", "linalg_vector_norm", "clamp_min", "expand", "div", "mul", "mul", "add", "silu",
        "slice", "clone", "constant_pad_nd",
    ]  # fmt: skip
    assert (chain.calls, chain.after, chain.before) == (3, [conv], [conv])
    assert chain.source == "vae.decoder, vae.decoder.up_blocks.*.resnets"
    before = "vae:chain:add+linalg_vector_norm+clamp_min+7more:1x384x8x8:fp32 op 2"
    assert [i.origins for i in chain.inputs] == [  # the residual: the previous chain's add
        [conv], [before, f"{chain.name} op 0"], ["parameter"]
    ]  # fmt: skip
    eager = chain_runner(chain, "eager", "cpu").run()
    compiled = chain_runner(chain, "compile", "cpu").run()
    assert [list(t.shape) for t in eager] == [list(t.shape) for t in compiled]
    for expected, got in zip(eager, compiled, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_the_dataflow_keeps_no_history() -> None:
    """A program that runs its model many times (denoising steps) keeps the nodes of the ops
    whose tensors are alive (and a bounded number of others), not of every op it ran."""
    from ncu_classify.record.dataflow import Node

    torch.manual_seed(0)
    net, x = Net().eval(), torch.randn(1, 4, 3, 6, 6)
    recorder = Recorder(roots={"net": net})
    flow = recorder.flow
    assert flow is not None

    def nodes_held() -> int:
        held = [e[2] for e in flow.objects.values()] + [e[1] for e in flow.storages.values()]
        return len({id(n) for n in [*held, *flow.stream] if isinstance(n, Node)})

    counts = []
    with recorder, torch.no_grad():
        for steps in (10, 290):
            for _ in range(steps):
                x = net(x)[:, :4].contiguous()  # (each step reads the one before)
            counts.append(nodes_held())
    # the entries of tensors gone are dropped past 1,000 (plus twice the live ones): 290 steps
    # more stay below (kept, they grow by about 10 nodes a step)
    assert counts[1] < 1000 + 3 * counts[0], counts
    assert [r.calls for r in flow.chains.records.values()] == [300, 600]


def test_try_plans_the_largest_chains_eagerly_and_fused(recorded: tuple[str, Path]) -> None:
    """`try --chains`: each tied chain as two shapes capture replays (`cNN.as_recorded` eager,
    `cNN.compiled` under Inductor), which read back as chain shapes with the chain whole."""
    from ncu_classify.cards.model import CardFile
    from ncu_classify.shapes.chain_shape import ChainShape
    from ncu_classify.tries.plan import plan_tries

    shapes = load_shapes(recorded[1])
    empty = CardFile.model_construct(cards=[])  # no card: the chains alone
    plan, text = plan_tries(empty, shapes, ("c", "s"), 10, [], chains=5)
    assert [(m.rank, m.op, m.calls, m.group) for m in plan.moves] == [
        (1, "chain", 2, "net:chain:add+native_group_norm+silu+constant_pad_nd:1x8x3x6x6:fp32"),
        (2, "chain", 1, "net:chain:native_group_norm+silu+constant_pad_nd:1x8x3x6x6:fp32"),
    ]  # untimed (CPU): the most called first
    assert [t.label for t in plan.moves[0].tries] == ["as_recorded", "compiled"]
    tries = Path(recorded[1]).with_name("tries.yaml")
    tries.write_text(text)
    entries = load_shapes(tries).entries()
    assert [e.group for e in entries] == [
        "net:c01.as_recorded", "net:c01.compiled", "net:c02.as_recorded", "net:c02.compiled",
    ]  # fmt: skip
    first = entries[0].shape
    assert isinstance(first, ChainShape) and first.compile is None
    assert first.chain == shapes.chains["net"][1] and entries[1].shape.compile == "default"
    assert first.nominal_flops() == 0 and first.nominal_bytes() > 0


def test_try_passes_over_an_untied_chain_with_why(recorded: tuple[str, Path]) -> None:
    """A chain the recording could not tie together is never tried, and the plan says why."""
    from ncu_classify.cards.model import CardFile
    from ncu_classify.shapes.chains import Chain
    from ncu_classify.tries.plan import plan_tries

    shapes = load_shapes(recorded[1])
    untied = Chain(name="net:chain:x", calls=9, untied=["an input of unknown origin"])
    shapes.chains["net"].insert(0, untied)
    plan, _ = plan_tries(CardFile.model_construct(cards=[]), shapes, ("c", "s"), 1, [], chains=1)
    assert [m.group for m in plan.moves] == [
        "net:chain:add+native_group_norm+silu+constant_pad_nd:1x8x3x6x6:fp32"
    ]
    assert [(p.group, p.why) for p in plan.no_alternative] == [
        ("net:chain:x", "not tied together: an input of unknown origin")
    ]


def test_a_write_through_a_slice_compiles_as_the_program_wrote_it(tmp_path: Path) -> None:
    """Wan's rotary embedding writes its two halves through strided slices of an `empty_like`;
    the recording sees the second write's target as an as_strided view of the first write's
    output, and Inductor refuses a write through as_strided. Compiled, the replay writes through
    the plain slice it finds by storage and view, and computes what the model did."""
    from ncu_classify.replay.chain import chain_runner

    class Rotary(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
            h = self.a(x)
            x1, x2 = h.unflatten(-1, (-1, 2)).unbind(-1)
            out = torch.empty_like(h)
            out[..., 0::2] = x1 * cos - x2 * sin
            out[..., 1::2] = x1 * sin + x2 * cos
            return self.b(out)

    path = tmp_path / "s.yaml"
    path.write_text(_record(Rotary(), torch.randn(3, 8), torch.randn(3, 4), torch.randn(3, 4)))
    (chain,) = load_shapes(path).chains["net"]
    assert any("as_strided" in json.dumps(op.args) for op in chain.ops)
    # the last op's output (the slice it wrote), and the whole buffer that the linear reads
    assert [o.model_dump(exclude_none=True) for o in chain.outputs] == [
        {"ref": [12, 0]},
        {"ref": [12, 0], "as_strided": {"shape": [3, 8], "strides": [8, 1], "offset": 0}},
    ]
    eager, _ = chain_runner(chain, "eager", "cpu")
    compiled, inputs = chain_runner(chain, "compile", "cpu")
    h, cos, sin = (i for i in inputs if i.dim() == 2)
    x1, x2 = h[:, 0::2], h[:, 1::2]
    expected = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)
    assert [list(o.shape) for o in eager()] == [[3, 4], [3, 8]]
    torch.testing.assert_close(eager()[-1], expected, atol=0.0, rtol=0.0)
    torch.testing.assert_close(compiled()[-1], expected, atol=1e-6, rtol=1e-6)


def test_two_temporaries_of_unknown_origin_are_two_inputs_however_memory_is_reused(
    tmp_path: Path,
) -> None:
    """Each Python number a slice assignment writes is a constant torch lifts into a tensor the
    recorder did not see made: two constants are two inputs of the chain, also when the
    second takes the first one's memory (and id) once it is freed; as before, one tensor read
    twice is one input. (Told apart by id, the chain had one input or two, and Allegro's
    `mask[0, :1] = 1; mask[1, :9] = 1` recorded two different files, as the allocator went.)"""

    class Filled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.a(x)
            h[:, :1] = 1.0
            h[:, 2:] = 2.0
            return self.b(F.silu(h))

    path = tmp_path / "s.yaml"
    path.write_text(_record(Filled(), torch.randn(3, 4)))
    (chain,) = load_shapes(path).chains["net"]
    lifted = [op.args[0] for op in chain.ops if op.overload == "aten.lift_fresh.default"]
    assert lifted == [{"input": 0}, {"input": 2}]  # (input 1: the linear's output)
    assert [chain.inputs[k].origins for k in (0, 2)] == [["unknown"], ["unknown"]]

    recorder = Recorder(roots={})
    flow = recorder.flow
    assert flow is not None
    idents = [flow.sources((torch.ones(2),), {})[0].ident for _ in range(20)]  # freed in turn
    assert len(set(idents)) == 20
    kept = torch.ones(2)
    assert flow.sources((kept, kept), {})[0].ident == flow.sources((kept,), {})[0].ident
