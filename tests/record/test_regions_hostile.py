"""Compiled regions used as a careless or hostile program would (issue 40): recompiles that
are not graph breaks, dynamo's recompile limit (calls run eagerly), a region first called in
another thread, a graph break whose reason holds an address. Fast: `aot_eager` and a counting
backend, tiny tensors."""

from __future__ import annotations

import threading
import types
from pathlib import Path
from typing import Any

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

from ncu_classify.record.document import shapes_yaml, validated_document  # noqa: E402
from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.shapes.chain_shape import CompiledShape  # noqa: E402
from ncu_classify.shapes.file import ShapesFile, load_shapes  # noqa: E402


def _recorded(tmp_path: Path, program: Any) -> ShapesFile:
    """`program()` recorded (Python API), its shapes file written and read back."""
    torch._dynamo.reset()
    recorder = Recorder()
    with recorder:
        program()
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    return load_shapes(path)


def _uncovered(shapes: ShapesFile) -> list[tuple[str, str, int]]:
    assert shapes.recorded is not None and shapes.recorded.totals is not None
    return [(u.name, u.why, u.calls) for u in shapes.recorded.totals.uncovered]


def test_recompiles_are_no_graph_break(tmp_path: Path) -> None:
    """Three sizes through a static region: three graphs (two recompiles), each call ran one
    whole graph, so nothing ran eagerly between graphs (it was 3 calls "not covered", said
    to be a graph break's)."""

    def program() -> None:
        f = torch.compile(lambda x: x.sin() * 2, backend="aot_eager", dynamic=False)
        for k in (1, 2, 3):
            f(torch.ones(k))

    shapes = _recorded(tmp_path, program)
    regions = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    assert [(r.graph, r.compile_id, r.calls) for r in regions] == [
        (0, "0/0", 1), (1, "0/1", 1), (2, "0/2", 1),
    ]  # fmt: skip
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert (shapes.recorded.compiled.recompiles, shapes.recorded.compiled.graph_breaks) == (2, {})
    assert _uncovered(shapes) == []


def test_calls_past_the_recompile_limit_ran_eagerly_and_are_said(tmp_path: Path) -> None:
    """Past dynamo's recompile limit (2 here) a call runs no graph, eagerly, unseen (the
    recorder's modes are set aside): those 3 calls are uncovered work, with that cause."""

    def program() -> None:
        f = torch.compile(lambda x: x.cos() + 1, backend="aot_eager", dynamic=False)
        for k in range(1, 6):
            f(torch.ones(k))

    with torch._dynamo.config.patch(recompile_limit=2):
        shapes = _recorded(tmp_path, program)
    regions = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    assert [(r.compile_id, r.calls) for r in regions] == [("0/0", 1), ("0/1", 1)]
    ((name, why, calls),) = _uncovered(shapes)
    assert name.startswith("(code run eagerly between the graphs of compiled region test_")
    assert why.startswith("ran none of the region's graphs (run eagerly past dynamo's recompile")
    assert calls == 3


def test_a_region_first_called_in_another_thread_still_compiles(tmp_path: Path) -> None:
    """Under the recorder, the region's first call in another thread ran under that thread's
    counting mode: dynamo ran the frame eagerly and never compiled it again, also in the
    recorded thread (the program ran uncompiled). Now it compiles in both; the thread's call
    is one uncovered call, the recorded thread's is the graph's."""
    compiled: list[int] = []

    def backend(graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        compiled.append(len(inputs))
        return graph.forward

    def program() -> None:
        f = torch.compile(lambda x: x * 3, backend=backend)
        thread = threading.Thread(target=lambda: f(torch.ones(2)))
        thread.start()
        thread.join()
        assert f(torch.ones(2)).tolist() == [3.0, 3.0]

    shapes = _recorded(tmp_path, program)
    assert compiled == [1]  # compiled once (in the thread), run compiled in both
    (region,) = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    assert (region.region.split(".")[-1], region.backend, region.calls) == (
        "_lambda_",
        "backend",
        1,
    )
    assert (f"(compiled region {region.region}, called in another thread)", 1) in [
        (name, calls) for name, _, calls in _uncovered(shapes)
    ]


@torch.compiler.disable
def _eager_part(x: Any) -> Any:
    return x.exp()


def test_a_graph_break_reason_names_no_address(tmp_path: Path) -> None:
    """dynamo's reason for a `torch.compiler.disable`d call names the function with its
    address (`<function _eager_part at 0x7f...>`): written as it was, two recordings of one
    program differed. The address is left out; the break is counted, its calls uncovered."""

    def program() -> None:
        f = torch.compile(lambda x: _eager_part(x + 1) * 2, backend="aot_eager")
        for _ in range(2):
            f(torch.ones(2))

    shapes = _recorded(tmp_path, program)
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    ((reason, count),) = shapes.recorded.compiled.graph_breaks.items()
    assert "<function _eager_part>" in reason and " at 0x" not in reason and count == 1
    ((_, why, calls),) = _uncovered(shapes)
    assert "graph break" in why and calls == 2


def test_what_a_region_returns_and_takes(tmp_path: Path) -> None:
    """A region returning a tuple, a dict, None (writing its input in place): the program's
    values are its own; each graph replays eagerly, its outputs as many as the chain's."""
    from ncu_classify.replay.chain import chain_runner

    seen: list[Any] = []

    def program() -> None:
        tup = torch.compile(lambda x: (x + 1, x * 2), backend="aot_eager")
        dct = torch.compile(lambda x: {"a": x.sin(), "b": [x.cos()]}, backend="aot_eager")

        @torch.compile(backend="aot_eager")
        def none(x: Any) -> None:
            x.add_(1)

        x = torch.ones(3)
        seen.extend([tup(x)[1].tolist(), dct(x)["b"][0].tolist(), none(x), x.tolist()])

    shapes = _recorded(tmp_path, program)
    assert seen == [[2.0, 2.0, 2.0], [0.5403023362159729] * 3, None, [2.0, 2.0, 2.0]]
    regions = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    assert len(regions) == 3
    for region in regions:
        run, _ = chain_runner(region.chain, "eager", "cpu")
        assert len(run()) == len(region.chain.outputs)


def test_a_dynamic_graph_is_a_shape_per_size(tmp_path: Path) -> None:
    """`dynamic=True` compiles one graph for every size: its calls at 3, 5 and 7 rows were one
    shape of the first call's layouts (3 rows, the int argument 3 written into its chain).
    Each layout is now a shape of its own (`sizes`), its chain at its own sizes; the graph is
    still one graph, no recompile. After an automatic-dynamic recompile (the default), the
    same: the static graph, then the dynamic one at each size."""
    from ncu_classify.replay.chain import chain_runner

    def program(dynamic: bool | None) -> Any:
        def run() -> None:
            f = torch.compile(lambda x, n: x.sum(0) + n, backend="aot_eager", dynamic=dynamic)
            for k in (3, 5, 7):
                assert f(torch.ones(k, 2), k).tolist() == [2.0 * k, 2.0 * k]

        return run

    shapes = _recorded(tmp_path, program(True))
    regions = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    got = [(r.graph, r.sizes, r.calls, r.chain.inputs[0].tensor.shape) for r in regions]
    assert got == [(0, None, 1, [3, 2]), (0, 1, 1, [5, 2]), (0, 2, 1, [7, 2])]
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert (shapes.recorded.compiled.graphs, shapes.recorded.compiled.recompiles) == (1, 0)
    for region, k in zip(regions, (3, 5, 7), strict=True):
        run, _ = chain_runner(region.chain, "eager", "cpu")
        (out,) = run()
        assert out.shape == (2,) and region.chain.ops[-1].args[-1] == k
    shapes = _recorded(tmp_path, program(None))
    regions = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    got = [(r.graph, r.compile_id, r.sizes, r.chain.inputs[0].tensor.shape) for r in regions]
    assert got == [(0, "0/0", None, [3, 2]), (1, "0/1", None, [5, 2]), (1, "0/1", 1, [7, 2])]
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert (shapes.recorded.compiled.graphs, shapes.recorded.compiled.recompiles) == (2, 1)


def test_the_program_compiles_as_before_once_the_recording_ends(tmp_path: Path) -> None:
    """A function compiled before the recording (the Python API) runs eagerly under the
    recorder's modes, and dynamo had marked its frame to run eagerly for good: after the
    recording it never compiled. Now it compiles at its next call after the recording; a
    region compiled during the recording and compiled again after it (a new size) is the
    program's alone (it was a shape of 0 calls, refused in the shapes file)."""
    compiled: list[int] = []

    def backend(graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        compiled.append(inputs[0].shape[0])
        return graph.forward

    torch._dynamo.reset()
    before = torch.compile(lambda x: x * 5, backend=backend)
    recorder = Recorder()
    with recorder:
        before(torch.ones(2))
        during = torch.compile(lambda x: x + 7, backend=backend, dynamic=False)
        during(torch.ones(3))
    assert compiled == [3]  # `before` ran eagerly, recorded op by op
    assert before(torch.ones(2)).tolist() == [5.0, 5.0] and compiled == [3, 2]
    assert during(torch.ones(4)).tolist() == [8.0] * 4 and compiled == [3, 2, 4]
    document = validated_document(recorder, "test")
    (region,) = [s for s in document.stages["main"] if isinstance(s, CompiledShape)]
    assert (region.calls, region.chain.inputs[0].tensor.shape) == (1, [3])
    assert document.recorded.totals is not None and document.recorded.totals.uncovered == []


def test_a_compiled_function_keeps_torch_compile_s_attributes() -> None:
    """What `torch.compile(fn)` returns carries dynamo's attributes (`_torchdynamo_orig_callable`,
    `get_compiler_config`, ...): under the recorder the function returned had none of them, and
    `innermost_fn` did not find the program's function. Now they are there, as without it."""
    from torch._dynamo.eval_frame import innermost_fn

    def double(x: Any) -> Any:
        return x * 2

    plain = torch.compile(double, backend="aot_eager")
    with Recorder():
        recorded = torch.compile(double, backend="aot_eager")
        assert recorded(torch.ones(2)).tolist() == [2.0, 2.0]
    assert {k for k in vars(plain) if k.startswith("_torch")} <= set(vars(recorded))
    assert innermost_fn(recorded) is double and callable(recorded.get_compiler_config)


def test_the_program_s_bad_arguments_to_torch_compile_fail_as_without_the_recorder() -> None:
    """`mode` with `options` is refused by torch.compile (RuntimeError); under the recorder
    the wrapped compile took both and the program ran on. Now torch checks the arguments as
    it would (an unknown mode, an unknown keyword: the same errors)."""

    def inc(x: Any) -> Any:
        return x + 1

    def errors() -> list[str]:
        found = []
        for options in ({"mode": "max-autotune", "options": {}}, {"mode": "bogus"}, {"foo": 1}):
            try:
                torch.compile(inc, **options)
                found.append("no error")
            except (RuntimeError, TypeError) as exc:
                found.append(f"{type(exc).__name__}: {exc}")
        return found

    plain = errors()
    with Recorder():
        recorded = errors()
    assert recorded == plain and "no error" not in plain


def test_a_data_dependent_branch_is_a_graph_break_said(tmp_path: Path) -> None:
    """`if x.sum() > 0:` in a region breaks its graph (two graphs, code between them), but
    dynamo counts that break as `unimplemented`, not `graph_break`: the file said 0 graph
    breaks. Now it is listed, with dynamo's reason."""

    def program() -> None:
        @torch.compile(backend="aot_eager")
        def clip(x: Any) -> Any:
            if x.sum() > 100:
                return x * 0
            return x + 1

        for _ in range(2):
            assert clip(torch.ones(2)).tolist() == [2.0, 2.0]

    shapes = _recorded(tmp_path, program)
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    ((reason, count),) = shapes.recorded.compiled.graph_breaks.items()
    assert reason.startswith("Data-dependent branching") and count == 1
    ((_, why, calls),) = _uncovered(shapes)
    assert "graph break" in why and calls == 2


def _doubled(y: Any) -> Any:
    return y.relu() * 2


class _Scaled(torch.nn.Module):
    """A linear then a compiled function shared with another module (`post`)."""

    def __init__(self, post: Any) -> None:
        super().__init__()
        self.lin, self.post = torch.nn.Linear(2, 2), post

    def forward(self, x: Any) -> Any:
        return self.post(self.lin(x))


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_function_compiled_once_and_called_from_two_stages_is_each_stage_s(
    tmp_path: Path, dynamic: bool
) -> None:
    """One compiled function called by a DiT and a VAE module (one graph: the second caller
    reuses it): its 6 calls were all the first caller's (`dit:dit._doubled`, the VAE's stage 3
    calls short, on a GPU its kernel time too). Now each caller's calls are a shape of its
    stage and region; still one graph, no recompile. Dynamic: each caller's sizes its own."""

    def program() -> None:
        post = torch.compile(_doubled, backend="aot_eager", dynamic=dynamic)
        dit, vae = _Scaled(post), _Scaled(post)
        with torch.no_grad():
            for rows in (3, 3, 5)[: 3 if dynamic else 2]:
                vae(dit(torch.ones(rows, 2)))

    torch._dynamo.reset()
    recorder = Recorder(stages=[("dit*", "dit"), ("vae*", "vae")])
    with recorder:
        program()
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    shapes = load_shapes(path)
    got = {
        stage: [
            (s.region, s.graph, s.sizes, s.calls, s.chain.inputs[0].tensor.shape)
            for s in members
            if isinstance(s, CompiledShape)
        ]
        for stage, members in shapes.stages.items()
        if stage != "main"
    }
    assert got == (
        {
            "dit": [("dit._doubled", 0, None, 2, [3, 2])],
            "vae": [("vae._doubled", 0, None, 2, [3, 2])],
        }
        if not dynamic
        else {
            "dit": [("dit._doubled", 0, None, 2, [3, 2]), ("dit._doubled", 0, 1, 1, [5, 2])],
            "vae": [("vae._doubled", 0, None, 2, [3, 2]), ("vae._doubled", 0, 1, 1, [5, 2])],
        }
    )
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    notes = shapes.recorded.compiled
    regions = ["dit:dit._doubled", "vae:vae._doubled"]
    assert (notes.regions, notes.graphs, notes.recompiles) == (regions, 1, 0)
    assert shapes.recorded.totals is not None and _uncovered(shapes) == []


def test_a_tensor_made_inside_a_region_is_a_drawn_constant(tmp_path: Path) -> None:
    """`torch.tensor([...])` inside a region (HunyuanVideo's DiT makes one) traces to a
    `get_attr` constant: the region was no shape but uncovered work ("_tensor_constant0: not
    a tensor the chain holds"). The constant is now an input of the chain (`compiled region
    constant`, drawn at replay as any input is), and the region replays."""
    from ncu_classify.replay.chain import chain_runner

    def program() -> None:
        f = torch.compile(_scaled_by_constants, backend="aot_eager")
        for _ in range(2):
            assert f(torch.ones(2)).tolist() == [4.0, 5.0]

    shapes = _recorded(tmp_path, program)
    assert _uncovered(shapes) == []
    (region,) = [s for s in shapes.stages["main"] if isinstance(s, CompiledShape)]
    got = [(i.tensor.shape, i.tensor.dtype, i.origins) for i in region.chain.inputs]
    assert got == [
        ([2], "float32", ["compiled region input"]),
        ([2], "float32", ["compiled region constant"]),
        ([], "int64", ["compiled region constant"]),
    ]
    assert [op.overload for op in region.chain.ops] == [
        "aten.lift_fresh_copy.default", "aten.mul.Tensor", "aten.lift_fresh_copy.default",
        "aten.add.Tensor",
    ]  # fmt: skip
    run, _ = chain_runner(region.chain, "eager", "cpu")
    (out,) = run()
    assert out.shape == (2,) and region.calls == 2


def _scaled_by_constants(x: Any) -> Any:
    return x * torch.tensor([1.0, 2.0]) + torch.tensor(3)


def test_with_dynamo_off_the_compiled_program_is_recorded_as_it_runs_eagerly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`TORCHDYNAMO_DISABLE=1` makes `torch.compile` hand back the module or function as it is:
    the recorder still wrapped it and set its modes aside around each call, so the program's
    ops ran unseen (a region that "ran none of its graphs", 100 % not covered) and the
    module's `forward` stayed wrapped after the recording. Now it runs as it is and is
    recorded eagerly: a linear and its ops, with their module paths."""
    monkeypatch.setenv("TORCHDYNAMO_DISABLE", "1")
    block = _Scaled(_doubled)
    forward = block.forward

    def program() -> None:
        compiled, double = torch.compile(block), torch.compile(_doubled)
        assert compiled is block and double is _doubled
        with torch.no_grad():
            double(compiled(torch.ones(3, 2)))

    shapes = _recorded(tmp_path, program)
    assert block.forward == forward
    got = [(st, s.op, s.source, s.calls) for st, ss in shapes.stages.items() for s in ss]
    assert got == [
        ("compiled", "linear", "compiled.lin", 1),
        ("compiled", "aten", "compiled", 1),
        ("compiled", "aten", "compiled", 1),
        ("main", "aten", "(no module)", 1),
        ("main", "aten", "(no module)", 1),
        ("main", "aten", "(no module)", 1),
    ]  # fmt: skip (the block as the program names it; the function's relu and mul, twice)
    assert shapes.recorded is not None and shapes.recorded.compiled is None
    assert _uncovered(shapes) == []


class _Pair(torch.nn.Module):
    """Two blocks of one class, run by the program one by one (no forward of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.dit, self.vae = _Scaled(_doubled), _Scaled(_doubled)


def test_blocks_the_program_reaches_through_a_variable_are_named_by_their_path(
    tmp_path: Path,
) -> None:
    """`top.dit(x)` then a compiled `top.vae.forward` (as `vae.decode = torch.compile(
    vae.decode)`): neither block is held by a variable of its own, so both went by their
    class name (`_scaled`): two modules under one path, the region's and the linear's calls
    merged, no `--stage` able to tell them apart. Now each is its path inside the module the
    variable holds: `dit`, `vae`, each a stage of its own (`top.dit` and `top.vae` were both
    of stage `top`)."""

    def program() -> None:
        top = _Pair()
        top.vae.forward = torch.compile(top.vae.forward, backend="aot_eager")
        with torch.no_grad():
            for _ in range(2):
                top.vae(top.dit(torch.ones(3, 2)))

    shapes = _recorded(tmp_path, program)
    got = [(stage, s.op, s.source, s.calls) for stage, ss in shapes.stages.items() for s in ss]
    assert got == [
        ("dit", "linear", "dit.lin", 2), ("dit", "aten", "dit", 2), ("dit", "aten", "dit", 2),
        ("vae", "compiled", "vae", 2),
        ("main", "aten", "(no module)", 2),
    ]  # fmt: skip


def _through(model: Any, x: Any) -> Any:
    """A helper of the program's that runs whichever model it is given."""
    return model(x)


def test_two_models_run_by_one_helper_are_two_modules(tmp_path: Path) -> None:
    """`_through(dit, x)` then `_through(vae, y)`: both models were named by the helper's
    argument, `model`: a compiled DiT and an eager VAE merged under one path and stage. A name
    another live module holds is now passed over for one further out: the VAE is `vae`."""

    def program() -> None:
        dit = torch.compile(_Scaled(_doubled), backend="aot_eager")
        vae = _Scaled(_doubled)
        with torch.no_grad():
            for _ in range(2):
                _through(vae, _through(dit, torch.ones(3, 2)))

    shapes = _recorded(tmp_path, program)
    got = [(stage, s.op, s.source, s.calls) for stage, ss in shapes.stages.items() for s in ss]
    assert got == [
        ("model", "compiled", "model", 2), ("vae", "linear", "vae.lin", 2),
        ("vae", "aten", "vae", 2), ("vae", "aten", "vae", 2), ("main", "aten", "(no module)", 2),
    ]  # fmt: skip


def _broken(x: Any) -> Any:
    y = x.sin()
    torch._dynamo.graph_break()
    if y.sum() > 0:
        y = y * 2
    return y.cos()


def test_the_graph_breaks_are_said_where_they_are(tmp_path: Path) -> None:
    """The file said why a region broke (dynamo's reasons, counted) but not where: now each
    break's place in the program (`file:line`, from dynamo's graph-break log, read quietly
    while recording) with its reason's first line; the log is as it was afterwards."""
    import inspect
    import logging
    import os

    from ncu_classify.record.break_sites import LOGGER

    def program() -> None:
        f = torch.compile(_broken, backend="aot_eager")
        for _ in range(2):
            f(torch.ones(3))

    log = logging.getLogger(LOGGER)
    before = (log.level, log.propagate, list(log.handlers))
    shapes = _recorded(tmp_path, program)
    assert (log.level, log.propagate, list(log.handlers)) == before
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    first = inspect.getsourcelines(_broken)[1]
    here = os.path.relpath(__file__)
    assert shapes.recorded.compiled.graph_break_sites == {
        f"{here}:{first + 2}": "Call to `torch._dynamo.graph_break()`",
        f"{here}:{first + 3}": "Data-dependent branching",
    }
    assert sum(shapes.recorded.compiled.graph_breaks.values()) == 2


def test_dynamo_s_graph_break_log_is_as_it_was_when_leaving_the_recording_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Should undoing the recording's other changes fail on the way out, the handler on
    dynamo's graph-break log is still removed (it was skipped: the log stayed quiet and held
    by a finished recording)."""
    import logging

    from ncu_classify.record import region_graph
    from ncu_classify.record.break_sites import LOGGER
    from ncu_classify.record.regions import Regions

    def fails(_: int) -> None:
        raise RuntimeError("undo failed")

    log = logging.getLogger(LOGGER)
    before = (log.level, log.propagate, list(log.handlers))
    regions = Regions(recorder=None, new_entry=lambda *a, **k: None)
    monkeypatch.setattr(region_graph, "unskipped", fails)
    with pytest.raises(RuntimeError, match="undo failed"), regions:
        assert len(log.handlers) == len(before[2]) + 1
    assert (log.level, log.propagate, list(log.handlers)) == before
    assert torch.compile is not regions._compile


class _Broken(torch.nn.Module):
    """A block whose forward breaks its graph: the code after the break is a frame of its own
    that every block of the class shares."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        torch._dynamo.graph_break()
        return _doubled(y)


def test_blocks_compiled_one_by_one_share_their_frames_as_without_the_recorder(
    tmp_path: Path,
) -> None:
    """Regional compilation (each block `torch.compile`d on its own, diffusers' advice): the
    frames the blocks share (a resume after a graph break, an attention processor) were
    compiled again for every block, since the recorder gave each `torch.compile` a backend of
    its own and dynamo shares a frame only between equal backends (`BACKEND_MATCH`): 6 graphs
    where the program compiles 2, the tiny Mochi DiT 10 where it compiles 8, and past dynamo's
    recompile limit (48 blocks) the program would have run eagerly. Now one backend per
    setting: the program's 2 graphs, each block's calls its own."""
    stats = torch._dynamo.utils.counters["stats"]

    def program() -> None:
        blocks = [torch.compile(_Broken(), backend="aot_eager") for _ in range(3)]
        x = torch.ones(3, 2)
        with torch.no_grad():
            for block in blocks:
                x = block(x)

    torch._dynamo.reset()
    before = stats["unique_graphs"]
    program()
    plain = stats["unique_graphs"] - before
    shapes = _recorded(tmp_path, program)
    assert stats["unique_graphs"] - before - plain == plain == 2
    regions = [s for ss in shapes.stages.values() for s in ss if isinstance(s, CompiledShape)]
    # each block a region of its own, both frames shared by all three
    assert sorted((r.compile_id, r.calls) for r in regions) == [("0/0", 1)] * 3 + [("1/0", 1)] * 3
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert (shapes.recorded.compiled.graphs, shapes.recorded.compiled.recompiles) == (2, 0)
    # blocks 2 and 3 were both named by the compiled wrapper's class, `optimizedmodule`, since
    # the loop's `block` named the first; then the first `block`, the others `blocks.N`: now
    # each by its place in the list the program holds (a stack of like blocks), one stage
    regions = shapes.recorded.compiled.regions
    assert regions == ["blocks:blocks.0", "blocks:blocks.1", "blocks:blocks.2"]


def test_two_modules_held_by_nothing_are_numbered(tmp_path: Path) -> None:
    """Modules the program holds in no variable, list or parent go by their class in lower
    case (a compiled one by its module's class): two alive at once were one path; the second
    is now numbered (`_scaled_2`)."""

    def program() -> None:
        held = types.SimpleNamespace(first=_Scaled(_doubled), second=_Scaled(_doubled))
        held.second = torch.compile(held.second, backend="aot_eager")
        with torch.no_grad():
            held.second(held.first(torch.ones(3, 2)))

    shapes = _recorded(tmp_path, program)
    got = [(stage, s.op, s.source) for stage, ss in shapes.stages.items() for s in ss]
    assert got == [
        ("_scaled", "linear", "_scaled.lin"), ("_scaled", "aten", "_scaled"),
        ("_scaled", "aten", "_scaled"), ("_scaled_2", "compiled", "_scaled_2"),
        ("main", "aten", "(no module)"),
    ]  # fmt: skip


class _Island(torch.nn.Module):
    """A block whose child runs eagerly (`torch.compiler.disable`d forward)."""

    def __init__(self) -> None:
        super().__init__()
        self.eager = torch.nn.Linear(2, 2)
        self.eager.forward = torch.compiler.disable(self.eager.forward)  # type: ignore[method-assign]

    def forward(self, x: Any) -> Any:
        return self.eager(x.sin()).cos()


def test_a_break_at_a_disabled_forward_is_where_the_program_calls_it(tmp_path: Path) -> None:
    """dynamo places the break at a `torch.compiler.disable`d forward in torch's own module
    call (`torch/nn/modules/module.py:1789`) and words it "Failed to handle graph break
    gracefully...": the site is now the program's line that calls the block, and the reason
    the one under dynamo's wrapper."""
    import inspect
    import os

    def program() -> None:
        island = torch.compile(_Island(), backend="aot_eager")
        with torch.no_grad():
            island(torch.ones(3, 2))

    shapes = _recorded(tmp_path, program)
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    line = inspect.getsourcelines(_Island.forward)[1] + 1
    assert shapes.recorded.compiled.graph_break_sites == {
        f"{os.path.relpath(__file__)}:{line}": "Skip calling `torch.compiler.disable()`d function"
    }


def test_the_programs_guard_filter_is_dynamos_under_the_recorder(tmp_path: Path) -> None:
    """torch.compile takes `guard_filter_fn` out of `options` (in place) for dynamo: under the
    recorder it was taken by the first, checking call and lost to the compile that ran, so
    dynamo never called the program's filter (0 calls; 1 without the recorder). Now it is
    passed on, and the program's options dict is left as torch leaves it."""
    calls: list[int] = []

    def keep_all(entries: list[Any]) -> list[bool]:
        calls.append(len(entries))
        return [True] * len(entries)

    given = {"guard_filter_fn": keep_all}

    def program() -> None:
        f = torch.compile(_doubled, backend="aot_eager", options=given)
        f(torch.ones(3))

    shapes = _recorded(tmp_path, program)
    assert len(calls) == 1 and calls[0] > 0
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert shapes.recorded.compiled.graphs == 1
    assert given == {}  # (as torch.compile leaves it)
