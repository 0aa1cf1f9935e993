"""CUDA graphs in record (issue 40, item 2), the bookkeeping on the CPU (a CUDA graph needs a
GPU: the wrappers of torch.cuda.CUDAGraph are tried on the H200): the calls made while a graph
is captured are the graph's, not calls of their own; shapes made only inside a capture are
dropped; a replayed graph is one line of uncovered work that names what it holds, with its
replays, kernels and time (the clock marks each replay)."""

from __future__ import annotations

from helpers import import_or_skip

torch = import_or_skip("torch")

import torch.nn.functional as F  # noqa: E402

from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.record.timing import KernelTime  # noqa: E402


def test_captured_calls_are_the_graph_s_and_its_replays_are_timed_once() -> None:
    """An eager call, then two calls inside a capture (one of a shape seen before, one new):
    the shape keeps its eager call only, the new one is dropped, the graph holds both; replayed
    three times, it is one uncovered line of 3 calls with the replays' kernels and time."""
    layer = torch.nn.Linear(8, 8)
    recorder = Recorder(roots={"net": layer})
    x = torch.randn(4, 8)
    with recorder, torch.no_grad():
        layer(x)
        recorder.cuda_graphs.begin(1)
        layer(x)
        F.silu(layer(torch.randn(2, 8)))
        recorder.cuda_graphs.end(1)
        graph = recorder.cuda_graphs.graphs[1]
        graph.replays = 3  # (the wrapper's count of torch's replay(), on a GPU)
    linears = {k: e.calls for k, e in recorder.recording.entries.items() if "linear" in k}
    assert sorted(linears.values()) == [1]  # the capture's new M=2 shape: dropped
    assert sum(graph.captured.values()) == 4  # 2 linears, the silu, the draw of its input
    assert all(k.startswith(("shape ", "op ")) for k in graph.captured)
    times = {("cudagraph", "0"): KernelTime(kernels=9, ns=30_000)}
    (item,) = recorder.cuda_graphs.uncovered(times)
    assert (item.name, item.calls, item.kernels, item.kernel_us) == (
        "(CUDA graph 0, captured in (no module))",
        3,
        9,
        30.0,
    )
    assert "holds 4 calls captured into it" in item.why and "not counted" in item.why
    assert recorder.cuda_graphs.uncovered(None)[0].kernel_us is None


def test_a_graph_of_calls_seen_eagerly_is_spread_over_their_shapes() -> None:
    """A warm-up call of a linear and a SiLU, then both captured and the graph replayed 3
    times: the graph's measured time (4,500 ns, 6 kernels) is spread by their eager time
    per call (1,000 and 500 ns), so the linear gains 3 calls, 3,000 ns and 3 kernels and the
    SiLU the rest; the graph is then covered (no uncovered line) and its note names both."""
    layer = torch.nn.Linear(8, 8)
    recorder = Recorder(roots={"net": layer})
    x = torch.randn(4, 8)
    with recorder, torch.no_grad():
        F.silu(layer(x))
        recorder.cuda_graphs.begin(1)
        F.silu(layer(x))
        recorder.cuda_graphs.end(1)
        graph = recorder.cuda_graphs.graphs[1]
        graph.replays = 3
    (linear_key,) = [k for k in graph.captured if "linear" in k]
    (silu_key,) = [k for k in graph.captured if "silu" in k]
    linear, silu = tuple(linear_key.split(" ", 1)), tuple(silu_key.split(" ", 1))
    times = {
        linear: KernelTime(kernels=1, ns=1_000, names={"gemm": 1}),
        silu: KernelTime(kernels=1, ns=500, names={"silu": 1}),
        ("cudagraph", "0"): KernelTime(kernels=6, ns=4_500, copy_ns=30),
    }
    recorder.cuda_graphs.attribute(times)
    assert graph.attributed and graph.kernel_ns == 4_500
    assert recorder.cuda_graphs.held(linear_key).calls == 4
    assert recorder.cuda_graphs.held(silu_key).calls == 4
    assert (times[linear].ns, times[linear].kernels, times[linear].names) == (4_000, 4, {"gemm": 4})
    assert (times[silu].ns, times[silu].kernels, times[silu].copy_ns) == (2_000, 4, 10)
    assert recorder.cuda_graphs.uncovered(times) == []
    names = {
        ("shape" if k.startswith("shape") else "op", k.split(" ", 1)[1]): k[:12]
        for k in graph.captured
    }
    (note,) = recorder.cuda_graphs.notes(names)
    assert (note.replays, note.kernel_us, note.attributed) == (3, 4.5, True)
    assert sorted(note.captured.values()) == [1, 1]


def test_a_graph_with_a_call_made_only_inside_it_stays_uncovered() -> None:
    """The SiLU of a new size runs only inside the capture: its share of the graph's time is
    unknown, so nothing is spread (the linear keeps its eager call) and the graph stays one
    uncovered line saying why."""
    layer = torch.nn.Linear(8, 8)
    recorder = Recorder(roots={"net": layer})
    with recorder, torch.no_grad():
        layer(torch.randn(4, 8))
        recorder.cuda_graphs.begin(1)
        F.silu(layer(torch.randn(4, 8)) + 1)
        recorder.cuda_graphs.end(1)
        recorder.cuda_graphs.graphs[1].replays = 2
    times = {("cudagraph", "0"): KernelTime(kernels=6, ns=4_500)}
    recorder.cuda_graphs.attribute(times)
    assert not recorder.cuda_graphs.graphs[1].attributed
    assert [e.calls for k, e in recorder.recording.entries.items() if "linear" in k] == [1]
    (item,) = recorder.cuda_graphs.uncovered(times)
    assert item.calls == 2 and "calls made only inside the graph" in item.why


def test_a_call_made_only_inside_the_capture_that_launches_nothing_does_not_stop_the_spread() -> (
    None
):
    """The capture also makes a tensor of ones (no eager call of that size; here its fill kernel
    is not among the graph's, as for a call that launches nothing): the graph's kernels,
    by name, are all launched by the linear and the SiLU seen eagerly, so its time is spread
    over them (the new call is no call of its own); a graph launching a kernel name no
    eager call launches is not."""
    layer = torch.nn.Linear(8, 8)
    recorder = Recorder(roots={"net": layer})
    x = torch.randn(4, 8)
    with recorder, torch.no_grad():
        F.silu(layer(x))
        for number in (1, 2):
            recorder.cuda_graphs.begin(number)
            F.silu(layer(x))
            torch.ones(5, 3)
            recorder.cuda_graphs.end(number)
            recorder.cuda_graphs.graphs[number].replays = 2
    first = recorder.cuda_graphs.graphs[1]
    assert any(recorder.cuda_graphs.held(k) is None for k in first.captured)  # the ones
    linear, silu = (
        tuple(next(k for k in first.captured if word in k).split(" ", 1))
        for word in ("linear", "silu")
    )
    times = {
        linear: KernelTime(kernels=1, ns=1_000, names={"gemm": 1}),
        silu: KernelTime(kernels=1, ns=500, names={"silu": 1}),
        ("cudagraph", "0"): KernelTime(kernels=4, ns=3_000, names={"gemm": 2, "silu": 2}),
        ("cudagraph", "1"): KernelTime(kernels=6, ns=3_000, names={"gemm": 2, "silu": 2, "x": 2}),
    }
    recorder.cuda_graphs.attribute(times)
    assert first.attributed and not recorder.cuda_graphs.graphs[2].attributed
    assert (times[linear].ns, times[silu].ns) == (3_000, 1_500)
