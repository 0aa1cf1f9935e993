"""A compiled region's eager code, op by op, from torch.profiler (issue 40): real profiles of
CPU torch (`record_shapes`), each ATen op made an `aten` call and replayed on the CPU to the
program's output; the kernels of a region's mark told to the outermost op the profile
describes whole. There are no kernels on the CPU: the grouping test gives each leaf op one
stand-in launch (its start, 1 us), on the real profile; the H200 test is in tests/gpu."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from ncu_classify.record.profiled_calls import (  # noqa: E402
    MEMORY_FORMATS,
    SCALAR_TYPES,
    TENSOR_DTYPES,
    Held,
    Lost,
    OpEvent,
    described,
)
from ncu_classify.record.region_ops import region_ops  # noqa: E402
from ncu_classify.record.timing import KernelClock, KernelTime, Launch, Mark, _config  # noqa: E402
from ncu_classify.record.totals import EAGER  # noqa: E402
from ncu_classify.replay.aten import Storages, prepare  # noqa: E402
from ncu_classify.shapes.aten import AtenShape  # noqa: E402

WEIGHT, FRAMES = torch.randn(8, 8, 3, 3, 3), torch.tensor([0, 1])


def _code(x: torch.Tensor) -> torch.Tensor:
    """What a causal-VAE block runs between graphs: norm, SiLU, a causal pad, a conv3d, the
    cache concatenated, a scale, a cast and a frames-first copy; an index by a tensor."""
    y = F.pad(F.silu(F.group_norm(x, 4)), (1, 1, 1, 1, 2, 0))
    h = F.conv3d(y, WEIGHT)
    y = torch.cat([h[:, :, -1:], h], dim=2)
    y = (y * 0.5 + 1).to(torch.bfloat16)
    return y.permute(0, 2, 1, 3, 4).contiguous()[FRAMES]


RESULTS: list[Any] = []  # the last profile's results (their event tree)


def _events(calls: int = 1) -> list[Any]:
    x = torch.randn(2, 8, 4, 6, 6)
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, experimental_config=_config()
    ) as prof:
        for _ in range(calls):
            _code(x)
    return _kept(prof)


def _kept(prof: Any) -> list[Any]:
    """A profile's events, its results kept as the last profile's (for their event tree)."""
    RESULTS[:] = [prof.profiler.kineto_results]
    return list(prof.profiler.kineto_results.events())


def _op(event: Any) -> OpEvent:
    """An event of the last profile read as `record` reads it: with its node of the event
    tree (every torch since 2.0; the H200's 2.11 has no structured shapes on its events)."""
    return OpEvent.of(event, _nodes().get(event.correlation_id()))


# The events' own shapes and strides (`structured_input_shapes`) came in torch 2.12.
STRUCTURED = hasattr(torch._C._autograd._KinetoEvent, "structured_input_shapes")
needs_structured = pytest.mark.skipif(not STRUCTURED, reason="torch < 2.12: no structured shapes")


class OldEvent:
    """A kineto event as torch 2.11's (the H200's) has it: no structured shapes or strides
    (torch 2.12 added them), its other fields as they are."""

    def __init__(self, event: Any) -> None:
        self._event = event

    def __getattr__(self, name: str) -> Any:
        if name.startswith("structured_input"):
            raise AttributeError(name)
        return getattr(self._event, name)


def _nodes() -> dict[int, Any]:
    """The last profile's event-tree nodes of ATen ops, by correlation id."""
    found, stack = {}, list(RESULTS[0].experimental_event_tree())
    while stack:
        node = stack.pop()
        found[node.correlation_id] = node
        stack.extend(node.children)
    return found


def _aten(events: list[Any]) -> list[Any]:
    return [e for e in events if e.name().startswith("aten::")]


def _outermost(events: list[Any]) -> list[Any]:
    """The ATen ops no other ATen op holds (what the program called)."""
    ops = _aten(events)
    inside = {
        id(e) for e in ops for o in ops
        if o is not e and o.start_ns() <= e.start_ns() and e.end_ns() <= o.end_ns()
    }  # fmt: skip
    return [e for e in ops if id(e) not in inside]


def test_each_op_the_program_called_is_described_and_replays_to_its_output() -> None:
    """The calls as the profiler saw them: `pad` and `index` lose an argument (a string, a list
    of optional tensors); every other op replays to the program's output shape and dtype."""
    told: list[tuple[str, list[int], str]] = []
    lost: list[str] = []
    for event in _outermost(_events()):
        try:
            call = described(_op(event), "float32")
        except Lost as exc:
            lost.append(f"{event.name()}: {exc}")
            continue
        shape = AtenShape.model_validate(
            {"op": "aten", "overload": call.overload, "args": call.args, "kwargs": call.kwargs},
            strict=False,
        )
        out = prepare(shape, 0, "cpu", Storages()).run()
        told.append((call.overload, list(out.shape), str(out.dtype).removeprefix("torch.")))
    assert told == [
        ("aten.group_norm.default", [2, 8, 4, 6, 6], "float32"),
        ("aten.silu.default", [2, 8, 4, 6, 6], "float32"),
        ("aten.conv3d.default", [2, 8, 4, 6, 6], "float32"),
        ("aten.slice.Tensor", [2, 8, 1, 6, 6], "float32"),
        ("aten.cat.default", [2, 8, 5, 6, 6], "float32"),
        ("aten.mul.Tensor", [2, 8, 5, 6, 6], "float32"),
        ("aten.add.Tensor", [2, 8, 5, 6, 6], "float32"),
        ("aten.to.dtype", [2, 8, 5, 6, 6], "bfloat16"),
        ("aten.permute.default", [2, 5, 8, 6, 6], "bfloat16"),
        ("aten.contiguous.default", [2, 5, 8, 6, 6], "bfloat16"),
    ]
    assert lost == [
        "aten::pad: aten::pad argument mode (str) is not in the profile",
        "aten::index: aten::index argument indices (List[Optional[Tensor]]) is not in the profile",
    ]


def test_the_profiler_s_dtype_and_enum_names_are_torch_s() -> None:
    """Each dtype the tables name, profiled: a tensor's C++ type name and the ScalarType and
    MemoryFormat numbers a cast and a copy carry map back to torch's names."""
    dtypes = [getattr(torch, name) for name in SCALAR_TYPES.values()]
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for dtype in dtypes:
            torch.zeros(2, 3, 4, 5, 6).to(dtype).clone()
        torch.zeros(2, 3, 4, 5, 6).contiguous(memory_format=torch.channels_last_3d)
        torch.zeros(2, 3, 4, 5).clone(memory_format=torch.channels_last)
    events = _aten(_kept(prof))
    casts = [e.concrete_inputs()[1] for e in events if e.name() == "aten::to"]
    assert [SCALAR_TYPES[n] for n in casts] == [str(d).removeprefix("torch.") for d in dtypes]
    clones = [e.dtypes()[0] for e in events if e.name() == "aten::clone"]
    assert [TENSOR_DTYPES[d] for d in clones[: len(dtypes)]] == list(SCALAR_TYPES.values())
    formats = [e.concrete_inputs()[-1] for e in events if e.name() == "aten::clone"]
    assert [MEMORY_FORMATS[n] for n in formats[-2:]] == ["channels_last_3d", "channels_last"]


KERNEL_OPS = ("native_group_norm", "silu", "fill_", "copy_", "mkldnn_convolution", "cat",
              "mul", "add", "index")  # fmt: skip


def _stand_in(events: list[Any]) -> tuple[KernelClock, tuple[str, ...]]:
    """A clock whose one region mark holds the profile: one launch (1 us) at the start of each
    op that launches a kernel on a GPU (a copy of a 0-d scalar is a host copy: none)."""
    target = ("region", "vae", EAGER.format(name="decoder.up"))
    clock = KernelClock(enabled=False, events=events, marks=[Mark(None, target)])
    clock.results = RESULTS[0]
    for op in _aten(events):
        name = op.name().removeprefix("aten::")
        first = _op(op).tensors[0]
        if name in KERNEL_OPS and not (isinstance(first, Held) and first.shape == []):
            launch = Launch(0, op.start_thread_id(), op.start_ns(), 1000, f"{name}_kernel")
            clock.launches.append(launch)
    return clock, target


def test_a_region_s_kernels_go_to_the_outermost_op_the_profile_describes() -> None:
    """Two calls of the code: each op it called is one shape of 2 calls with its kernels; the
    pad's kernels go to the `constant_pad_nd` it called (its mode is not profiled); the index's
    kernel stays the region's, naming it; what moved is taken from the region's time."""
    clock, target = _stand_in(_events(calls=2))
    before = KernelTime()
    for launch in clock.launches:
        before.add(launch.ns, name=launch.name)
    total, times = before.kernels, {target: before}
    found = region_ops(clock, times)
    (shapes,) = found.shapes().values()
    told = {
        s.get("overload", s["op"]): (s["calls"], s["real_kernels"], s["source"]) for s in shapes
    }
    assert told["conv3d"][:2] == (2, 1.0)  # typed; its mkldnn convolution's launch
    assert told["aten.constant_pad_nd.default"][:2] == (2, 2.0)  # fill_ + copy_
    assert told["aten.group_norm.default"] == (2, 1.0, "decoder.up")
    assert told["cast"][:2] == told["aten.contiguous.default"][:2] == (2, 1.0)
    assert "aten.pad.default" not in told and "aten.index.Tensor" not in told
    cat = next(s for s in shapes if s.get("overload") == "aten.cat.default")
    assert "note" not in cat  # (the event tree names a tensor list's dtypes)
    assert cat["args"][0][0]["tensor"]["dtype"] == "float32"
    left = times[target]
    assert (left.kernels, left.ns) == (2, 2000)  # the index's kernel, twice
    assert list(left.names) == ["index_kernel"]
    assert found.said(target) == "; ops the profile does not describe: aten::index x2"
    moved = sum(s["real_kernels"] * s["calls"] for s in shapes)
    assert moved + left.kernels == total  # every kernel counted once


@pytest.mark.parametrize("timed", [False, True])
def test_nothing_moves_without_a_timed_region(timed: bool) -> None:
    """Untimed (no GPU) or no region kernels: no shapes, the times untouched."""
    clock, target = _stand_in(_events())
    if not timed:
        assert region_ops(clock, None).ops == {}
        return
    clock.launches = []
    times = {target: KernelTime(kernels=3, ns=3000)}
    assert region_ops(clock, times).ops == {} and times[target].kernels == 3


def test_a_profile_that_does_not_read_as_expected_moves_nothing_and_says_why() -> None:
    """An event of another torch's profiler (no `device_type`): the recording goes on, the
    region's time stays its own, and its uncovered line says why."""

    class Odd:
        def name(self) -> str:
            return "aten::mul"

    clock, target = _stand_in(_events())
    clock.events = [*clock.events, Odd()]
    times = {target: KernelTime(kernels=len(clock.launches), ns=1000 * len(clock.launches))}
    found = region_ops(clock, times)
    assert found.ops == {} and times[target].kernels == len(clock.launches)
    assert found.said(target) == (
        "; its ops could not be read from the profile: AttributeError: 'Odd' object has no"
        " attribute 'device_type'"
    )


def test_an_event_without_the_structured_fields_reads_empty_and_is_not_described() -> None:
    """A kineto event of a torch without `structured_input_shapes` nor `shapes`: the op is
    not described (Lost), rather than a failure."""

    class Bare:
        def name(self) -> str:
            return "aten::silu"

        def start_ns(self) -> int:
            return 5

        def end_ns(self) -> int:
            return 9

        def dtypes(self) -> list[str]:
            return ["float"]

    op = OpEvent.of(Bare())
    assert (op.overload, op.tensors, op.concrete) == ("", [], [])
    with pytest.raises(Lost, match="the profile's inputs are incomplete"):
        described(op, None)


def test_a_profiled_conv_and_cast_are_the_typed_shapes_the_recorder_writes_eagerly() -> None:
    """The same code recorded eagerly (the recorder's modes) and profiled: its conv3d and its
    cast made typed shapes from the profile are exactly the recorder's (so the two recordings'
    cards match by group id); an op of no typed shape stays `aten`."""
    from ncu_classify.record.profiled_calls import typed
    from ncu_classify.record.recorder import Recorder

    x = torch.randn(2, 8, 4, 6, 6)
    recorder = Recorder()
    with recorder, torch.no_grad():
        _code(x)
    eager = {e.shape["op"]: e.shape for e in recorder.recording.entries.values()}
    made = {}
    for event in _outermost(_events()):
        try:
            shape = typed(described(_op(event), "float32"))
        except Lost:
            continue
        if shape is not None:
            made[shape["op"]] = shape
    assert sorted(made) == ["cast", "conv3d"]
    assert made["conv3d"] == eager["conv3d"] and made["cast"] == eager["cast"]
    assert made["conv3d"]["input"] == [2, 8, 6, 8, 8]
    silu = next(e for e in _outermost(_events()) if e.name() == "aten::silu")
    assert typed(described(_op(silu), None)) is None


def _casts() -> None:
    """Casts that name a device: `x.to(device, dtype)` and `x.to(other)` (torch makes it one)."""
    x = torch.randn(2, 8, 4, 6, 6)
    x.to("cpu", torch.bfloat16)
    x.to(torch.zeros(1, dtype=torch.float16))
    x.to(device="cpu", dtype=torch.bfloat16, memory_format=torch.channels_last_3d)


def test_a_cast_that_names_a_device_is_the_cast_the_recorder_writes_eagerly() -> None:
    """`x.to(device, dtype)` is `aten::to.device`, whose device the profile does not keep: it
    was lost (and its `_to_copy` an `aten` shape). A `to` that launches a kernel casts on the
    device its replay runs on, so it is `x.to(dtype)`: the typed cast the recorder writes for
    the same code eagerly, replayed to the program's output (its layout too)."""
    from ncu_classify.record.profiled_calls import typed
    from ncu_classify.record.recorder import Recorder

    recorder = Recorder()
    with recorder, torch.no_grad():
        _casts()
    eager = [e.shape for e in recorder.recording.entries.values()]
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, experimental_config=_config()
    ) as prof:
        _casts()
    tos = [e for e in _outermost(_kept(prof)) if e.name() == "aten::to"]
    assert [e.overload_name() for e in tos] == ["device"] * 3
    calls = [described(_op(e), None) for e in tos]
    assert [c.overload for c in calls] == ["aten.to.dtype"] * 3
    made_typed = [typed(c) for c in calls]
    assert made_typed[0] == made_typed[2]  # (a cast shape keeps the input's layout only)
    assert made_typed[:2] == eager
    assert [(s["from"], s["to"]) for s in eager] == [("fp32", "bf16"), ("fp32", "fp16")]
    made = []
    for call in calls:
        shape = {"op": "aten", "overload": call.overload, "args": call.args}
        out = prepare(AtenShape.model_validate(shape, strict=False), 0, "cpu", Storages()).run()
        made.append((out.dtype, out.stride()))
    x = torch.randn(2, 8, 4, 6, 6)
    program = [
        x.to("cpu", torch.bfloat16), x.to(torch.zeros(1, dtype=torch.float16)),
        x.to(device="cpu", dtype=torch.bfloat16, memory_format=torch.channels_last_3d),
    ]  # fmt: skip
    assert made == [(t.dtype, t.stride()) for t in program]
    assert made[2][1] == (1152, 1, 288, 48, 8)  # channels_last_3d, as the program's


def test_a_profiled_attention_keeps_its_keyword_only_scale() -> None:
    """The profile gives sdpa's `scale` and `enable_gqa` as keyword-only arguments: the typed
    shape made from it is the recorder's, scale included (it was dropped: another group id
    than the eager recording's, and a replay at the default scale)."""
    from ncu_classify.record.profiled_calls import typed
    from ncu_classify.record.recorder import Recorder

    q, kv = torch.randn(1, 4, 6, 8), torch.randn(1, 4, 10, 8)

    def attend() -> None:
        F.scaled_dot_product_attention(q, kv, kv, scale=0.25)

    recorder = Recorder()
    with recorder, torch.no_grad():
        attend()
    (eager,) = [e.shape for e in recorder.recording.entries.values()]
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, experimental_config=_config()
    ) as prof:
        attend()
    (event,) = _outermost(_kept(prof))
    made = typed(described(_op(event), None))
    assert made == eager
    assert (made["scale"], made["valid_keys"], made["heads"]) == (0.25, 10, 4)


def test_an_optional_string_the_profile_does_not_keep_is_lost_not_none() -> None:
    """`div(x, y, rounding_mode="floor")`: the profiler keeps no strings, and an absent
    optional reads the same, so the mode was described as None (a true division replayed for
    a floor division); now the op is not described, and says which argument it lacks."""
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, experimental_config=_config()
    ) as prof:
        torch.div(x, y, rounding_mode="floor")
        torch.div(x, 2, rounding_mode="trunc")
        torch.div(x, y)
    events = _outermost(_kept(prof))
    told = []
    for event in events:
        try:
            told.append(described(_op(event), None).overload)
        except Lost as exc:
            told.append(str(exc))
    lost = "aten::div argument rounding_mode (Optional[str]) is not in the profile"
    assert told == [lost, lost, "aten.div.Tensor"]


@needs_structured
def test_without_structured_shapes_the_event_tree_gives_the_same_calls() -> None:
    """torch 2.11's kineto events have no strides: each op is described from its node of the
    event tree instead, to the same call, save the tensor list's dtype, which the tree names
    (no note), and the host mark of a Python number, which the tree, knowing every tensor is on
    the host here, leaves off (as the eager recorder does on the CPU); without the tree,
    nothing is described."""
    events = _outermost(_events())
    nodes = _nodes()
    same = 0
    for event in events:
        try:
            new = described(OpEvent.of(event), "float32")
        except Lost:
            continue
        old = described(OpEvent.of(OldEvent(event), nodes[event.correlation_id()]), None)
        assert "device" not in str(old.args)
        unmarked = json.loads(json.dumps(new.args).replace(', "device": "cpu"', ""))
        assert (old.overload, old.args, old.kwargs) == (new.overload, unmarked, new.kwargs)
        assert old.note is None
        same += 1
    assert same == 10
    conv = next(e for e in events if e.name() == "aten::conv3d")
    with pytest.raises(Lost, match="the profile's inputs are incomplete"):
        described(OpEvent.of(OldEvent(conv)), None)


@needs_structured
def test_the_tree_path_groups_a_region_s_kernels_as_the_structured_one() -> None:
    """The grouping test's profile read from the events' own structured shapes (torch >=
    2.12, no tree) and as on torch 2.11 (events without strides, the tree): the same shapes,
    calls and kernels (the host marks apart, as above, and the structured path's note on the
    tensor list's dtype, taken from the code beside it)."""
    clock, target = _stand_in(_events(calls=2))
    clock.results = None  # (the events' own structured shapes)
    times = {target: KernelTime(kernels=len(clock.launches), ns=1000 * len(clock.launches))}
    new = region_ops(clock, times).shapes()
    clock.events = [OldEvent(e) for e in clock.events]
    clock.results = RESULTS[0]
    times = {target: KernelTime(kernels=len(clock.launches), ns=1000 * len(clock.launches))}
    old = region_ops(clock, times).shapes()
    cat = next(s for s in new["vae"] if s.get("overload") == "aten.cat.default")
    assert cat["note"] == "its tensor list's dtype is taken from the code beside it (not profiled)"
    assert cat["args"][0][0]["tensor"]["dtype"] == "float32"
    for shapes in (old["vae"], new["vae"]):
        for shape in shapes:
            shape.pop("note", None)
    unmarked = json.loads(json.dumps(new).replace(', "device": "cpu"', ""))
    assert old == unmarked and len(old["vae"]) == 9


def _masks(real: bool) -> tuple[list[Any], list[torch.dtype]]:
    """A profile of what a text encoder does to its padding mask: a bool and an int tensor
    times a Python number (float32 results, by type promotion), or times a real 0-d float64
    tensor (float64 results); the program's result dtypes."""
    x = torch.randn(4, 8)
    scale = torch.tensor(-1e4, dtype=torch.float64) if real else -1e4
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        made = [(x > 0) * scale, x.int() * scale]
    return _kept(prof), [t.dtype for t in made]


@pytest.mark.parametrize("real", [False, True])
def test_a_python_number_the_profile_keeps_as_a_0d_tensor_replays_as_one(real: bool) -> None:
    """The profile keeps `mask * -1e4`'s number as a 0-d float64 host tensor, which replayed
    as a tensor would make the result float64 (type promotion). Where the op's kernels do not
    compute in double it was a Python number and replays as one (`{number: float64}`); a real
    0-d float64 tensor's kernels name `double` (as CUDA's do: `MulFunctor<double>`) and it
    stays a tensor. Each replays to the program's dtype."""
    events, program = _masks(real)
    target = ("region", "dit", EAGER.format(name="encoder"))
    clock = KernelClock(enabled=False, events=events, marks=[Mark(None, target)])
    clock.results = RESULTS[0]
    kernel = "MulFunctor<double>" if real else "MulFunctor<float>"
    for op in _aten(events):
        if op.name() == "aten::mul":
            clock.launches.append(Launch(0, op.start_thread_id(), op.start_ns(), 1000, kernel))
    times = {target: KernelTime(kernels=2, ns=2000)}
    shapes = region_ops(clock, times).shapes()["dit"]
    numbers = [s["args"][1] for s in shapes]
    if real:
        assert [n["tensor"]["dtype"] for n in numbers] == ["float64", "float64"]
    else:
        assert numbers == [{"number": "float64"}] * 2
    replayed = [
        prepare(AtenShape.model_validate(s, strict=False), 0, "cpu", Storages()).run().dtype
        for s in shapes
    ]
    assert replayed == program == [torch.float64 if real else torch.float32] * 2
    assert times[target].kernels == 0


def test_a_0d_float64_tensor_where_no_number_is_taken_stays_a_tensor() -> None:
    """`torch.where(mask, x, a 0-d float64 tensor)`: its kernels compute in float (the 0-d
    tensor does not promote), but `where` takes no Python number there, so none was passed: it
    stays a tensor and replays (a bare number was refused: "Expected a value of type
    'Tensor'"); `mask * 0.5` beside it is still a number."""
    x = torch.randn(4, 8)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        made = [torch.where(x > 0, x, torch.tensor(0.5, dtype=torch.float64)), (x > 0) * 0.5]
    events = _kept(prof)
    target = ("region", "dit", EAGER.format(name="encoder"))
    clock = KernelClock(enabled=False, events=events, marks=[Mark(None, target)])
    clock.results = RESULTS[0]
    for op in _aten(events):
        if op.name() in ("aten::where", "aten::mul"):
            launch = Launch(0, op.start_thread_id(), op.start_ns(), 1000, "Functor<float>")
            clock.launches.append(launch)
    times = {target: KernelTime(kernels=2, ns=2000)}
    shapes = {s["overload"]: s for s in region_ops(clock, times).shapes()["dit"]}
    assert shapes["aten.where.self"]["args"][2]["tensor"]["dtype"] == "float64"
    assert shapes["aten.mul.Tensor"]["args"][1] == {"number": "float64"}
    replayed = [
        prepare(AtenShape.model_validate(shapes[name], strict=False), 0, "cpu", Storages())
        .run()
        .dtype
        for name in ("aten.where.self", "aten.mul.Tensor")
    ]
    assert replayed == [t.dtype for t in made] == [torch.float32, torch.float32]


def test_an_unkept_number_is_an_argument_only_in_its_own_form() -> None:
    """`{number: float64}` is the one form of a number not kept; another is refused where it
    stands, as any argument the replay does not know."""
    call = {"op": "aten", "overload": "aten.mul.Tensor", "calls": 1}
    tensor = {"tensor": {"shape": [2], "dtype": "bool", "strides": [1]}}
    ok = AtenShape.model_validate({**call, "args": [tensor, {"number": "float64"}]})
    assert ok.tensors()[0].dtype == "bool" and len(ok.tensors()) == 1
    with pytest.raises(ValueError, match=r"\{'number': 'int64'\} is no argument the replay knows"):
        AtenShape.model_validate({**call, "args": [tensor, {"number": "int64"}]})


class Kernel:
    """A stand-in GPU kernel event (CPU torch has none) launched by a real profiled op."""

    def __init__(self, op: Any, number: int) -> None:
        self.op, self.number = op, number

    def name(self) -> str:
        return f"{self.op.name().removeprefix('aten::')}_kernel"

    def device_type(self) -> Any:
        return torch._C._autograd.DeviceType.CUDA

    def start_ns(self) -> int:
        return self.op.start_ns()

    def end_ns(self) -> int:
        return self.op.start_ns() + 1000

    def duration_ns(self) -> int:
        return 1000

    def start_thread_id(self) -> int:
        return 0

    def correlation_id(self) -> int:
        return 10**9 + self.number

    def linked_correlation_id(self) -> int:
        return int(self.op.correlation_id())

    def is_user_annotation(self) -> bool:
        return False


@torch._dynamo.disable
def _cached(h: torch.Tensor) -> torch.Tensor:
    """What dynamo runs eagerly inside a compiled block (a function it may not trace): the
    causal cache concatenated to the padded frames, scaled."""
    return torch.cat([h[:, :, -1:], F.pad(h, (0, 0, 0, 0, 1, 0))], dim=2)[:, :, 2:] * 2


class CachedBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv3d(8, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + _cached(F.silu(self.conv(x)))


def test_a_recording_s_compiled_region_eager_code_becomes_shapes_end_to_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A whole recording on the CPU with its clock running (torch.profiler, the marks) and a
    stand-in kernel for each op that launches one on a GPU: the code the compiled block ran
    eagerly (a dynamo-disabled function) is shapes of the stage from its region, 2 calls each,
    beside the block's two graphs; the region's eager line keeps no kernel."""
    from ncu_classify.record.document import shapes_yaml, validated_document
    from ncu_classify.record.recorder import Recorder
    from ncu_classify.shapes.file import load_shapes

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: None)
    torch._dynamo.reset()
    net = torch.nn.Sequential(torch.nn.Conv3d(4, 8, 1), CachedBlock())
    recorder = Recorder(roots={"net": net})
    recorder.clock = recorder.device_ops.clock = KernelClock(True)
    x = torch.randn(1, 4, 4, 8, 8)
    with recorder, torch.no_grad():
        net[1].compile()
        net(x)
        net(x)
    launching = ("aten::slow_conv3d_forward", "aten::silu", "aten::cat", "aten::fill_",
                 "aten::copy_", "aten::mul", "aten::add")  # fmt: skip
    ops = [
        e for e in recorder.clock.events
        if e.name() in launching and (e.shapes()[0] != [] or e.dtypes()[0] == "TensorList")
    ]  # fmt: skip
    recorder.clock.events += [Kernel(op, n) for n, op in enumerate(ops)]
    recorder.recording.device = "cuda"
    document = validated_document(recorder, "test")
    eager = {
        (s.name or "").split(":")[0]: (s.calls, s.real_kernels, s.real_us)
        for s in document.stages["net"] if s.op == "aten" and s.source == "net.1"
    }  # fmt: skip
    assert eager == {
        "aten.cat.default": (2, 1.0, 1.0),
        "aten.constant_pad_nd.default": (2, 2.0, 2.0),  # its fill_ and copy_
        "aten.mul.Tensor": (2, 1.0, 1.0),
    }
    compiled = [s for s in document.stages["net"] if s.op == "compiled"]
    assert len(compiled) == 2 and all(s.calls == 2 for s in compiled)
    totals = document.recorded.totals
    assert totals is not None
    region = [u for u in totals.uncovered if "compiled region" in u.name]
    assert all(not u.kernels for u in region), region
    written = tmp_path / "shapes.yaml"  # the file capture reads, read back as capture will
    written.write_text(shapes_yaml(document))
    assert len(load_shapes(written).stages["net"]) == len(document.stages["net"])


class _Outputs(torch.utils._python_dispatch.TorchDispatchMode):
    """Each op a program dispatches below the composite ones, with its output's layout."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, Any]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        self.seen.append((f"aten::{func._schema.name.split('::')[1]}", _layout(out)))
        return out


def _layout(value: Any) -> Any:
    """An output's (first tensor's) shape, dtype and strides."""
    if isinstance(value, list | tuple):
        return _layout(value[0]) if value else None
    if not isinstance(value, torch.Tensor):
        return None
    return list(value.shape), str(value.dtype).removeprefix("torch."), list(value.stride())


def _dispatched(node: Any, overloads: dict[int, str]) -> bool:
    """Whether a dispatch mode sees this profiled op (it has no composite kernel)."""
    overload = overloads.get(node.correlation_id, "")
    name = node.name + (f".{overload}" if overload not in ("", "default") else "")
    return not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")


def test_a_diffusers_decoder_s_profiled_calls_replay_to_the_program_s_outputs() -> None:
    """LTX-Video's VAE decoder (diffusers, a small config, random weights), profiled as record
    profiles a region's eager code: every op the program called is described from the event
    tree and replays on the CPU to the output the program's op had (shape, dtype, strides: a
    second run under a dispatch mode, which sees the ops with no composite kernel; a composite
    op's output is its last such callee's). reports/record/describe_profiled_ops.py measures
    the same on more models."""
    diffusers = import_or_skip("diffusers")
    torch.manual_seed(0)
    vae = diffusers.AutoencoderKLLTXVideo(
        latent_channels=8, block_out_channels=(8, 8, 8, 8),
        decoder_block_out_channels=(8, 8, 8, 8), layers_per_block=(1, 1, 1, 1, 1),
        decoder_layers_per_block=(1, 1, 1, 1, 1), patch_size=1,
    ).eval()  # fmt: skip
    z, mode = torch.randn(1, 8, 2, 4, 4), _Outputs()
    with torch.no_grad():
        with profile(
            activities=[ProfilerActivity.CPU], record_shapes=True, experimental_config=_config()
        ) as prof:
            vae.decode(z)
        with mode:
            vae.decode(z)
    everything = _kept(prof)
    events, nodes = _outermost(everything), _nodes()
    overloads = {e.correlation_id(): e.overload_name() for e in _aten(everything)}
    seen = [n for e in events for n in _seen(nodes[e.correlation_id()], overloads)]
    assert [n.name for n in seen] == [name for name, _ in mode.seen]
    program = {n.correlation_id: out for n, (_, out) in zip(seen, mode.seen, strict=True)}
    replayed, wanted, untold = [], [], 0
    for event in events:
        call = described(_op(event), "float32", numbers=True)
        shape = {"op": "aten", "overload": call.overload, "args": call.args, "kwargs": call.kwargs}
        out = prepare(AtenShape.model_validate(shape, strict=False), 0, "cpu", Storages()).run()
        want = _output(nodes[event.correlation_id()], program)
        if want is None:  # (a composite op that returned its input: `to` its own dtype)
            untold += 1
            continue
        replayed.append(_layout(out))
        wanted.append(want)
    assert (len(events), len(replayed), untold) == (233, 206, 27)
    assert replayed == wanted


def _seen(node: Any, overloads: dict[int, str]) -> list[Any]:
    """The ops under (and including) a profiled op that a dispatch mode sees, in order."""
    if _dispatched(node, overloads):
        return [node]
    children = sorted(node.children, key=lambda c: c.start_time_ns)
    return [n for c in children if c.name.startswith("aten::") for n in _seen(c, overloads)]


def _output(node: Any, program: dict[int, Any]) -> Any:
    """An op's output in the program: its own where the mode saw it, else its last callee's."""
    if node.correlation_id in program:
        return program[node.correlation_id]
    for child in sorted(node.children, key=lambda c: c.start_time_ns, reverse=True):
        if (found := _output(child, program)) is not None:
            return found
    return None
