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
