"""The kernel clock's bookkeeping, as pure logic on profiler-shaped events (synthetic: what
CUPTI reports is checked on the H200 by tests/gpu): a kernel goes to the innermost call mark
open when the PyTorch op that launched it started; copies are counted apart; marks that say
nothing take their parent's target; the per-stage totals are the sum of their parts."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ROOT, import_or_skip

torch = import_or_skip("torch")

from ncu_classify.record.timing import MARK, InnermostMark, KernelClock, attribute  # noqa: E402
from ncu_classify.record.totals import loose_work, measured, stage_totals  # noqa: E402
from ncu_classify.shapes.recorded import UncoveredCall  # noqa: E402

CPU = torch._C._autograd.DeviceType.CPU
CUDA = torch._C._autograd.DeviceType.CUDA


class Event:
    """What attribute() reads of a torch profiler (kineto) event."""

    def __init__(self, name: str, device: Any, start: int, end: int, thread: int, corr: int,
                 linked: int, annotation: bool = False) -> None:  # fmt: skip
        self._values = (name, device, start, end, thread, corr, linked, annotation)

    def name(self) -> str:
        return self._values[0]

    def device_type(self) -> Any:
        return self._values[1]

    def start_ns(self) -> int:
        return self._values[2]

    def end_ns(self) -> int:
        return self._values[3]

    def duration_ns(self) -> int:
        return self._values[3] - self._values[2]

    def start_thread_id(self) -> int:
        return self._values[4]

    def correlation_id(self) -> int:
        return self._values[5]

    def linked_correlation_id(self) -> int:
        return self._values[6]

    def is_user_annotation(self) -> bool:
        return self._values[7]


def _trace() -> list[Event]:
    """Mark 0 (a torch call) holds mark 1 (an ATen op) and later an op outside mark 1; a third
    op runs outside every mark. The runtime launch events come from CUPTI with the OS thread id
    (777), not torch's (1): attribution goes through the op the kernel names, not the launch."""
    return [
        Event(f"{MARK}0", CPU, 0, 100, 1, 1, 0, annotation=True),
        Event(f"{MARK}1", CPU, 10, 20, 1, 2, 0, annotation=True),
        Event("aten::mul", CPU, 12, 18, 1, 3, 0),
        Event("cudaLaunchKernel", CPU, 13, 14, 777, 40, 3),
        Event("mul_kernel", CUDA, 50, 60, 0, 40, 3),
        Event("Memcpy DtoD (Device -> Device)", CUDA, 60, 65, 0, 41, 3),
        Event(f"{MARK}1", CUDA, 50, 60, 0, 2, 2, annotation=True),  # the mark, GPU side
        Event("aten::add", CPU, 30, 40, 1, 5, 0),
        Event("add_kernel", CUDA, 70, 90, 0, 42, 5),
        Event("my_range", CUDA, 70, 95, 0, 6, 6, annotation=True),  # a user's range, GPU side
        Event("aten::neg", CPU, 200, 210, 1, 7, 0),
        Event("neg_kernel", CUDA, 300, 301, 0, 43, 7),
    ]


def test_a_kernel_goes_to_the_innermost_mark_of_the_op_that_launched_it() -> None:
    per_mark, outside = attribute(_trace())
    assert (per_mark[1].kernels, per_mark[1].ns, per_mark[1].copy_ns) == (1, 10, 5)
    assert (per_mark[0].kernels, per_mark[0].ns, per_mark[0].copy_ns) == (1, 20, 0)
    assert (outside.kernels, outside.ns) == (1, 1)  # neg ran outside every mark


@pytest.mark.parametrize(
    ("moment", "number"),
    [(5, 0), (10, 1), (15, 2), (21, 1), (35, 3), (45, 1), (60, 0), (150, None), (-1, None)],
)
def test_the_innermost_span_that_holds_a_moment(moment: int, number: int | None) -> None:
    """0: [0,100] holds 1: [10,50], which holds 2: [12,20] and 3: [30,40]."""
    spans = [(0, 100, 0), (10, 50, 1), (12, 20, 2), (30, 40, 3)]
    assert InnermostMark(spans).at(moment) == number


def test_a_mark_that_says_nothing_takes_its_parents_target() -> None:
    clock = KernelClock(enabled=False)
    assert clock.begin() == -1  # not measuring: no marks at all
    clock.enabled = True
    clock._profiler = object()  # marks are kept while a profiler runs
    outer = clock.begin()
    inner = clock.begin()
    clock.end(inner)
    clock.end(outer, ("shape", "k"))
    lone = clock.begin()
    clock.end(lone)
    assert (clock.resolve(inner), clock.resolve(outer), clock.resolve(lone)) == (
        ("shape", "k"),
        ("shape", "k"),
        None,
    )
    clock._profiler = None


def test_kernel_time_per_target_and_what_falls_outside() -> None:
    clock = KernelClock(enabled=True)
    clock.events = _trace()
    clock.marks = []
    from ncu_classify.record.timing import Mark

    clock.marks = [Mark(None, ("loose", "dit")), Mark(0, ("op", "key"))]
    times = measured(clock)
    assert times is not None
    assert (times[("op", "key")].ns, times[("op", "key")].copy_ns) == (10, 5)
    assert (times[("loose", "dit")].ns, times[("loose", "dit")].marks) == (20, 1)
    assert times[("outside",)].ns == 1
    items = loose_work({("vae", "aten.x.y (a distinct call beyond the 2 a recording keeps)"): 4},
                       times)  # fmt: skip
    names = [(i.stage, i.name, i.calls, i.kernel_us) for i in items]
    assert names == [
        ("vae", "aten.x.y (a distinct call beyond the 2 a recording keeps)", 4, 0.0),
        ("dit", "(kernels outside any ATen op)", 1, 0.02),
        ("(none)", "(kernels outside any recorded call)", 0, 0.001),
    ]


def test_stage_totals_are_the_sum_of_shapes_and_uncovered_work() -> None:
    from ncu_classify.shapes.ops import CastShape

    def cast(calls: int, real_us: float, real_kernels: float) -> CastShape:
        fields = {"op": "cast", "shape": [8], "from": "fp32", "to": "bf16"}
        return CastShape.model_validate(
            {**fields, "calls": calls, "real_us": real_us, "real_kernels": real_kernels}
        )

    stages = {"dit": [cast(40, 298.2269, 1.0), cast(3, 10.5, 2.0)]}
    uncovered = [
        UncoveredCall(stage="dit", name="a", why="b", calls=2, kernels=4, kernel_us=7.25),
        UncoveredCall(stage="vae", name="a", why="b", calls=1, kernels=1, kernel_us=1.0),
    ]
    totals = stage_totals(stages, uncovered, {"dit": 3.5, "output": 1.25})
    assert {stage: t.model_dump() for stage, t in totals.items()} == {
        "dit": {"calls": 45, "kernels": 50, "kernel_us": 11967.826, "copy_us": 3.5},
        "vae": {"calls": 1, "kernels": 1, "kernel_us": 1.0, "copy_us": 0.0},
        "output": {"calls": 0, "kernels": 0, "kernel_us": 0.0, "copy_us": 1.25},
    }
    untimed = stage_totals(stages, [], None)  # by calls: no times
    assert {stage: t.model_dump(exclude_none=True) for stage, t in untimed.items()} == {
        "dit": {"calls": 43}
    }


def test_a_parameter_cast_inside_a_forward_is_inference_outside_it_building(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An fp32 norm casts its bf16 weight on every call (diffusers' FP32LayerNorm: the Wan
    14B step ran 80 such kernels); `model.half()` and a parameter cast in user code outside
    any forward build the model and are not recorded."""
    import torch.nn.functional as F

    from ncu_classify.record.document import validated_document
    from ncu_classify.record.recorder import Recorder

    class Norm(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(8, dtype=torch.bfloat16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.layer_norm(x.float(), (8,), self.weight.float())

    norm = Norm()
    recorder = Recorder([("norm*", "net")], roots={"norm": norm})
    with recorder:
        norm.weight.float()  # outside any forward: building
        norm.to(torch.bfloat16)
        for _ in range(2):
            norm(torch.ones(4, 8, dtype=torch.bfloat16))
    document = validated_document(recorder, "test")
    casts = [(s.shape, s.calls) for s in document.stages["net"] if s.op == "cast"]
    assert casts == [([4, 8], 2), ([8], 2)]


def test_a_timed_recording_is_written_again_byte_for_byte_from_its_models() -> None:
    """The Wan 14B recording of the H200 (kernel time, copies, setup time per stage), read into
    the shapes-file models and written by `shapes_yaml`, is the committed file byte for byte
    below its two comment lines (an older writer's wording)."""
    import json
    import lzma

    from ruamel.yaml import YAML

    from ncu_classify.record.document import shapes_yaml
    from ncu_classify.record.shapes_document import ShapesDocument
    from ncu_classify.shapes.file import ShapesFile
    from ncu_classify.shapes.recorded import Recorded

    path = ROOT / "reports" / "record" / "wan_14b_480x832_h200_shapes.yaml.xz"
    text = lzma.decompress(path.read_bytes()).decode("utf-8")
    data = json.loads(json.dumps(YAML(typ="safe").load(text)))
    recorded = Recorded.model_validate(data["recorded"])
    assert recorded.totals is not None and recorded.totals.basis == "kernel_time"
    assert recorded.totals.stages["dit"].kernel_us == 260226.511
    stages = ShapesFile.model_validate(data, strict=False).stages
    written = shapes_yaml(ShapesDocument(recorded=recorded, stages=stages))
    assert written.split("\n", 2)[2] == text.split("\n", 2)[2]


def test_kernels_launched_inside_torch_compile_s_own_ranges_are_compile_time_work() -> None:
    """A compiled graph's first call (mark 0) launches its Triton kernel once for real and,
    inside Inductor's `CachingAutotuner.benchmark_all_configs (dynamo_timed)` range, 3 times
    more while benchmarking configs (with the L2 flush between): those go to `TUNING`, which
    `measured` counts as model building (`setup`), not as the graph's time."""
    from ncu_classify.record.timing import TUNING, Mark

    bench = "CachingAutotuner.benchmark_all_configs (dynamo_timed)"
    events = [
        Event(f"{MARK}0", CPU, 0, 1000, 1, 1, 0, annotation=True),
        Event(bench, CPU, 10, 500, 1, 2, 0),
        Event("triton_poi_fused_0", CUDA, 20, 30, 0, 30, 2),
        Event("aten::zero_", CPU, 40, 45, 1, 3, 0),
        Event("vectorized_elementwise_kernel", CUDA, 46, 90, 0, 31, 3),
        Event("triton_poi_fused_0", CUDA, 100, 110, 0, 32, 2),
        Event("triton_poi_fused_0", CUDA, 120, 130, 0, 33, 2),
        Event("triton_poi_fused_0", CUDA, 600, 610, 0, 34, 1),  # the call's own launch
    ]
    per_mark, outside = attribute(events)
    assert (per_mark[0].kernels, per_mark[0].ns) == (1, 10)
    assert (per_mark[TUNING].kernels, per_mark[TUNING].ns) == (4, 74)
    assert outside.kernels == 0
    clock = KernelClock(enabled=True)
    clock.events, clock.marks = events, [Mark(None, ("shape", "graph"))]
    times = measured(clock)
    assert times is not None
    assert (times[("setup",)].ns, times[("shape", "graph")].ns) == (74, 10)


def test_each_shape_keeps_its_kernel_names_per_call() -> None:
    """The kernels a target launched, by name, as launches per call (issue 41, item 4): the
    most launched first; names cut at 160 characters (two signatures alike up to there add up),
    at most 40 names."""
    from ncu_classify.record.timing import KernelTime, Mark
    from ncu_classify.record.totals import kernel_names, per_call

    clock = KernelClock(enabled=True)
    clock.events = _trace()
    clock.marks = [Mark(None, ("loose", "dit")), Mark(0, ("op", "key"))]
    times = measured(clock)
    assert times is not None
    assert per_call(times[("op", "key")], 2, True) == {
        "real_us": 0.005, "real_kernels": 0.5, "real_kernel_names": {"mul_kernel": 0.5}
    }  # fmt: skip
    assert per_call(None, 3, True)["real_kernel_names"] == {}
    assert per_call(times[("op", "key")], 2, False) == {}
    stem = "void at::native::elementwise_kernel<128, 4, " + "x" * 150
    launches = {f"{stem}A>(int)": 2, f"{stem}B>(int)": 1, "b": 1, "a": 1}
    launches.update({f"k{n:02d}": 1 for n in range(40)})
    kept = kernel_names(KernelTime(names=launches).names, 2)
    assert len(kept) == 40 and all(len(name) <= 160 for name in kept)
    assert list(kept)[:4] == [stem[:160], "a", "b", "k00"]
    assert kept[stem[:160]] == 1.5 and kept["a"] == 0.5
    from ncu_classify.cards.kernel_names import CUT_AT
    from ncu_classify.record.totals import NAME_CHARS

    assert NAME_CHARS == CUT_AT  # fidelity reads a 160-character name as cut


def test_shapes_of_one_group_merge_their_kernel_names() -> None:
    """Two calls that make one typed shape (a matmul and a linear of one size) add their
    kernel launches, weighted by calls; the names are written after `real_kernels`."""
    from ncu_classify.record.document import _merge
    from ncu_classify.shapes.ops import LinearShape

    def linear(calls: int, names: dict[str, float]) -> LinearShape:
        return LinearShape.model_validate(
            {"op": "linear", "M": 8, "N": 8, "K": 8, "calls": calls, "real_us": 4.0,
             "real_kernels": sum(names.values()), "real_kernel_names": names}
        )  # fmt: skip

    kept: dict = {}  # type: ignore[type-arg]
    _merge(kept, "dit:linear", linear(3, {"nvjet_a": 1.0}))
    _merge(kept, "dit:linear", linear(1, {"nvjet_b": 1.0, "splitK_reduce": 1.0}))
    (shape,) = kept.values()
    assert shape.real_kernel_names == {"nvjet_a": 0.75, "nvjet_b": 0.25, "splitK_reduce": 0.25}
    assert shape.real_kernels == 1.25 and shape.calls == 4
    assert list(shape.written())[-2:] == ["real_kernels", "real_kernel_names"]


def test_a_watched_mark_s_kernels_are_told_one_by_one_with_their_op() -> None:
    """A compiled region's own mark is watched: each of its kernels (not its copies) is kept
    with the thread and start of the op that launched it, beside the per-mark sums."""
    launches: list[Any] = []
    per_mark, _ = attribute(_trace(), {1}, launches)
    assert [(x.mark, x.thread, x.start, x.ns, x.name) for x in launches] == [
        (1, 1, 12, 10, "mul_kernel")
    ]
    assert per_mark[1].kernels == 1  # the sums are unchanged
    spans = InnermostMark([(0, 100, 0), (10, 50, 1), (12, 20, 2), (30, 40, 3)])
    assert (spans.chain(15), spans.chain(35), spans.chain(150)) == ([2, 1, 0], [3, 1, 0], [])
