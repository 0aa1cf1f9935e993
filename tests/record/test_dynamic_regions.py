"""Compiled regions with dynamic sizes (issue 40), on the CPU: a graph dynamo recompiled with a
symbolic size (the causal VAE's frame count, its cache growing) is recorded with the dims that
were symbolic and its size arithmetic, and replays the kernels the program's Inductor generated
for symbolic sizes, not those for the same sizes known (the H200's Wan decode, replayed with
static sizes: 12 of 13 recompiled graphs 2-11x faster than the program)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import import_or_skip, inductor_code, inductor_kernels

torch = import_or_skip("torch")

import torch.nn.functional as F  # noqa: E402

from ncu_classify.record.document import shapes_yaml, validated_document  # noqa: E402
from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.shapes.chain_shape import CompiledShape  # noqa: E402
from ncu_classify.shapes.chains import Chain, ChainOp  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402


class CachedConv(torch.nn.Module):
    """A causal conv with a frame cache, as Wan's decoder runs it: the cached frames and the
    new ones concatenated, padded in time, convolved, group-normed and upsampled in space."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv3d(4, 4, 3)
        self.fn: object = None

    def forward(self, x: torch.Tensor, cache: torch.Tensor) -> object:
        assert callable(self.fn)
        return self.fn(x, cache, self.conv.weight, self.conv.bias)


def _cached(
    x: torch.Tensor, cache: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    h = F.pad(torch.cat([cache, x], 2), (1, 1, 1, 1, 2, 0))
    h = F.group_norm(F.conv3d(h, weight, bias), 2)
    return F.interpolate(h, scale_factor=(1.0, 2.0, 2.0)).view(h.shape[0], -1).sum(1)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[CompiledShape], list[str]]:
    """The step called with 1, 2 and 3 new frames: graph 0 static, graph 1 dynamic (dynamo's
    recompile on the frame count), called at two frame counts; Inductor's output code of each
    compile."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = CachedConv().eval()
    recorder = Recorder(roots={"net": net})
    program: list[str] = []
    with inductor_code(program), recorder, torch.no_grad():
        net.fn = torch.compile(_cached)
        for frames in (1, 2, 3):
            net(torch.randn(1, 4, frames, 6, 6), torch.randn(1, 4, 2, 6, 6))
    path = tmp_path_factory.mktemp("dynamic") / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    regions = [s for s in load_shapes(path).stages["net"] if isinstance(s, CompiledShape)]
    return regions, program


def test_the_symbolic_dims_and_size_arithmetic_are_recorded(
    recorded: tuple[list[CompiledShape], list[str]],
) -> None:
    """Graph 0 (one frame) is static; graph 1 has the frame dim of `x` symbolic at both frame
    counts it ran, and computes the group norm's and the view's sizes from it."""
    regions, _ = recorded
    assert [(r.graph, r.sizes) for r in regions] == [(0, None), (1, None), (1, 1)]
    assert [[i.dynamic for i in r.chain.inputs] for r in regions] == [
        [[], [], [], []],
        [[], [2], [], []],  # (cache, x, weight, bias: as dynamo ordered them)
        [[], [2], [], []],
    ]
    assert [r.chain.inputs[1].tensor.shape for r in regions] == [
        [1, 4, 1, 6, 6], [1, 4, 2, 6, 6], [1, 4, 3, 6, 6]
    ]  # fmt: skip
    static, dynamic = regions[0].chain, regions[2].chain
    assert not [op for op in static.ops if op.computes_size]
    sizes = [op for op in dynamic.ops if op.computes_size]
    # the conv's frames: 2 cached + 3 new + 2 padded, less 2 (a 3-frame kernel)
    assert sizes[0].overload == "aten.sym_size.int" and sizes[0].value == 5
    assert {op.overload for op in sizes} >= {"aten.sym_size.int", "size.mul.default"}
    norm = next(op for op in dynamic.ops if op.overload == "aten.native_group_norm.default")
    hxw = norm.args[5]  # HxW: frames x 6 x 6, computed from the symbolic frame count
    assert isinstance(hxw, dict) and dynamic.ops[hxw["ref"][0]].value == 5 * 6 * 6


def test_a_dynamic_graph_replays_the_kernels_the_program_compiled(
    recorded: tuple[list[CompiledShape], list[str]],
) -> None:
    """The replay compiles each graph to the program's very kernels: symbolic sizes as kernel
    arguments where the program's graph had them (read as static sizes, the frame count is a
    constant in other kernels)."""
    from ncu_classify.replay.chain import chain_runner

    regions, program = recorded
    assert len(program) == 2 and "ks0" in "".join(inductor_kernels(program[1]).values())
    replayed: list[str] = []
    with inductor_code(replayed):
        outputs = [chain_runner(r.chain, "compile", "cpu").run() for r in regions]
    assert len(replayed) == 3
    for ran, again in zip([program[0], program[1], program[1]], replayed, strict=True):
        assert inductor_kernels(ran) and inductor_kernels(again) == inductor_kernels(ran)
    assert [tuple(o[0].shape) for o in outputs] == [(1,), (1,), (1,)]


def test_a_size_op_is_checked() -> None:
    """A size op returns a number (its value), no tensors; `size.` names a known function; a
    link to a size op's number is its output 0, nothing beyond."""
    with pytest.raises(ValueError, match="no size function"):
        ChainOp(overload="size.system.default", value=1)
    with pytest.raises(ValueError, match=r"is size\.mul\.default"):
        ChainOp(overload="size.mul.Tensor", args=[2, 3], value=6)
    with pytest.raises(ValueError, match="has a value"):
        ChainOp(overload="size.mul.default", args=[2, 3])
    spec = {"shape": [2], "dtype": "float32", "strides": [1]}
    with pytest.raises(ValueError, match="returns a number"):
        ChainOp.model_validate({"overload": "aten.sym_size.int", "value": 2, "outputs": [spec]})
    chain = {
        "name": "s:c", "calls": 1, "inputs": [{"tensor": spec, "dynamic": [0]}],
        "ops": [
            {"overload": "aten.sym_size.int", "args": [{"input": 0}, 0], "value": 2},
            {"overload": "aten.new_zeros.default", "args": [{"input": 0}, [{"ref": [0, 0]}]],
             "outputs": [spec]},
        ],
    }  # fmt: skip
    assert Chain.model_validate(chain).ops[0].computes_size
    chain["ops"][1]["args"] = [{"input": 0}, [{"ref": [0, 1]}]]  # type: ignore[index]
    with pytest.raises(ValueError, match="names no earlier op's output"):
        Chain.model_validate(chain)
    with pytest.raises(ValueError, match="dynamic dim 1 of a 1-d tensor"):
        Chain.model_validate({**chain, "inputs": [{"tensor": spec, "dynamic": [1]}]})


def test_an_old_chain_reads_as_static(tmp_path: Path) -> None:
    """A chain written before dynamic dims were kept has none: replayed static, as before."""
    spec = {"shape": [2, 3], "dtype": "float32", "strides": [3, 1]}
    chain = Chain.model_validate({
        "name": "s:c", "calls": 1, "inputs": [{"tensor": spec}],
        "ops": [{"overload": "aten.sin.default", "args": [{"input": 0}], "outputs": [spec]}],
    })  # fmt: skip
    assert chain.inputs[0].dynamic == [] and "dynamic" not in chain.model_dump_json()


def test_an_input_view_keeps_its_storage_offset() -> None:
    """A graph called with a view into its storage (a clip's later frames) is traced, and
    replayed, at the program's storage offset (it was 0: another view than the program's)."""
    from ncu_classify.record.region_graph import layouts
    from ncu_classify.record.region_trace import traced_chain

    kept: list[tuple[torch.fx.GraphModule, list[object]]] = []

    def keeping(graph: torch.fx.GraphModule, example_inputs: list[object]) -> object:
        kept.append((graph, example_inputs))
        return graph.forward

    torch._dynamo.reset()
    clip = torch.randn(10, 6)
    torch.compile(lambda x: x.sin() * 2, backend=keeping)(clip[3:])
    ((graph, example_inputs),) = kept
    chain = traced_chain(graph, layouts(example_inputs), "s:c", 1)
    assert chain.inputs[0].tensor.model_dump() == {
        "shape": [7, 6], "dtype": "float32", "strides": [6, 1], "offset": 18, "device": None
    }  # fmt: skip


def test_equal_sizes_dynamo_made_one_symbol_are_one_in_the_replay() -> None:
    """Under `dynamic=True` dynamo duck-sizes: a square image's height and width are one
    symbol, and the program's kernel reads one size for both. The chain says so (an assert
    that they are equal), and the replay's compile, with each dim marked dynamic (a symbol
    each), generates the program's kernel, not one reading two sizes."""
    from torch._inductor.compile_fx import compile_fx

    from ncu_classify.record.region_graph import layouts
    from ncu_classify.record.region_trace import traced_chain
    from ncu_classify.replay.chain import chain_runner

    kept: list[tuple[torch.fx.GraphModule, list[object]]] = []

    def keeping(graph: torch.fx.GraphModule, example_inputs: list[object]) -> object:
        kept.append((graph, example_inputs))
        return compile_fx(graph, example_inputs)

    def pooled(x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, 2) * 3

    torch._dynamo.reset()
    image = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    program: list[str] = []
    replayed: list[str] = []
    with inductor_code(program):
        torch.compile(pooled, backend=keeping, dynamic=True)(image)
    ((graph, example_inputs),) = kept
    chain = traced_chain(graph, layouts(example_inputs), "s:c", 1)
    with inductor_code(replayed):
        prepared = chain_runner(chain, "compile", "cpu")
        (out,) = prepared.run()
    assert chain.inputs[0].dynamic == [0, 1, 2, 3]
    equal = [op for op in chain.ops if op.overload == "size.eq.default"]
    assert [op.value for op in equal] == [True]
    torch.testing.assert_close(out, pooled(prepared.inputs[0]))
    assert inductor_kernels(program[0])
    assert inductor_kernels(replayed[0]) == inductor_kernels(program[0])
    (eager,) = chain_runner(chain, "eager", "cpu").run()
    torch.testing.assert_close(eager, out)


def test_a_view_link_beside_a_size_op_replays_compiled() -> None:
    """A chain with a size op (a number among the ops' results) and a link through another view
    (`as_strided`) replays compiled: the view is looked for among the tensors alone (the
    number was taken for one: AttributeError, 'int' object has no attribute 'dtype')."""
    from ncu_classify.replay.chain import chain_runner

    spec = {"shape": [4, 6], "dtype": "float32", "strides": [6, 1]}
    half = {"shape": [2, 6], "strides": [6, 1], "offset": 6}
    chain = Chain.model_validate({
        "name": "s:c", "calls": 1, "inputs": [{"tensor": spec, "dynamic": [0]}],
        "ops": [
            {"overload": "aten.sym_size.int", "args": [{"input": 0}, 0], "value": 4},
            {"overload": "aten.mul.Tensor", "args": [{"input": 0}, 2], "outputs": [spec]},
            {"overload": "aten.sin.default", "args": [{"ref": [1, 0], "as_strided": half}],
             "outputs": [{**spec, "shape": [2, 6]}]},
        ],
        "outputs": [{"ref": [2, 0]}],
    })  # fmt: skip
    prepared = chain_runner(chain, "compile", "cpu")
    (out,) = prepared.run()
    torch.testing.assert_close(out, (prepared.inputs[0] * 2)[1:3].sin())


def test_size_arithmetic_the_chain_does_not_know_is_named_without_an_address() -> None:
    """`math.sqrt` of a symbolic size (torch's `_sym_sqrt`, no size function) cannot be a
    chain: the reason names the function, not its address (one recording's words as the
    next's: it read `<function _sym_sqrt at 0x7f...>`)."""
    import math

    from ncu_classify.record.region_graph import layouts
    from ncu_classify.record.region_trace import traced_chain

    kept: list[tuple[torch.fx.GraphModule, list[object]]] = []

    def keeping(graph: torch.fx.GraphModule, example_inputs: list[object]) -> object:
        kept.append((graph, example_inputs))
        return graph.forward

    torch._dynamo.reset()
    torch.compile(lambda x: x.new_ones(int(math.sqrt(x.shape[0]))) + 1, backend=keeping,
                  dynamic=True)(torch.randn(9, 5))  # fmt: skip
    ((graph, example_inputs),) = kept
    with pytest.raises(ValueError, match=r"^_sym_sqrt: size arithmetic the chain does not know$"):
        traced_chain(graph, layouts(example_inputs), "s:c", 1)
