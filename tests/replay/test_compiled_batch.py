"""A batch of compiled shapes (one replay process: a stage's regions and chains) replayed as
capture replays them, on the CPU: each compiles as a first compile of its own, at its own
static sizes, however many the batch holds."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

from ncu_classify.record.region_graph import layouts  # noqa: E402
from ncu_classify.record.region_trace import traced_chain  # noqa: E402
from ncu_classify.replay.protocol import BatchFile  # noqa: E402
from ncu_classify.shapes.file import ShapeEntry  # noqa: E402


def _entry(number: int, sines: int, rows: int) -> ShapeEntry:
    """A compiled region of `sines` sines then a row sum, at `rows` x 4."""

    def region(x: Any) -> Any:
        for _ in range(sines):
            x = x.sin()
        return x.sum(0)

    graph = torch.fx.symbolic_trace(region)
    chain = traced_chain(graph, layouts([torch.ones(rows, 4)]), f"s:compiled:r{number}:g0", 1)
    shape = {
        "op": "compiled", "region": f"r{number}", "graph": 0, "backend": "inductor",
        "compile_id": f"{number}/0", "compile": "default", "chain": chain.model_dump(mode="json"),
    }  # fmt: skip
    return ShapeEntry.model_validate({"stage": "s", "group": f"s:r{number}", "shape": shape})


def test_each_compiled_shape_of_a_batch_compiles_on_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every chain's function shared one code object, so dynamo took the second shape of a
    batch for a recompile of the first: at another size it compiled a dynamic graph (kernels
    the program did not run; the third and later sizes reused it), and past dynamo's
    recompile limit (8; 2 here) the shape failed (`FailOnRecompileLimitHit`). Now each shape
    is one static graph of its own: 4 graphs for 4 shapes, none failed."""
    from ncu_classify.replay import chain as chain_replay
    from ncu_classify.replay import target as replay

    for name in ("empty_cache", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, lambda: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    on_cpu = chain_replay.chain_runner
    monkeypatch.setattr(
        replay, "chain_runner", lambda c, mode, device, *rest: on_cpu(c, mode, "cpu", *rest)
    )
    batch = BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=[])
    stats = torch._dynamo.utils.counters["stats"]
    torch._dynamo.reset()
    before = stats["unique_graphs"]
    with torch._dynamo.config.patch(recompile_limit=2):
        for number, (sines, rows) in enumerate([(1, 3), (1, 5), (2, 7), (3, 3)]):
            fields = replay.replay_one(_entry(number, sines, rows), batch)
            assert len(fields["input_sha256"]) == 64
    assert stats["unique_graphs"] - before == 4


def test_each_compiled_typed_shape_of_a_batch_compiles_on_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A typed shape with `compile:` (try's move) was compiled as `torch.compile(op)`, and
    every op a builder makes (a lambda) shares one code object: the second cast of a batch
    was a recompile of the first, a dynamic graph that the third and fourth reused (2 graphs
    for 4 shapes, not one of them the static op alone past the first). Now 4 static graphs."""
    from ncu_classify.replay import target as replay

    for name in ("empty_cache", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, lambda: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *args, **kwargs: self)
    monkeypatch.setattr(replay, "DRAW_DEVICE", "cpu")
    batch = BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=[])
    stats = torch._dynamo.utils.counters["stats"]
    torch._dynamo.reset()
    before = stats["unique_graphs"]
    with torch._dynamo.config.patch(recompile_limit=2):
        for rows in (3, 5, 7, 9):
            shape = {"op": "cast", "shape": [rows, 4], "from": "fp32", "to": "bf16"}
            shape["compile"] = "default"
            entry = ShapeEntry.model_validate({"stage": "s", "group": f"s:c{rows}", "shape": shape})
            assert len(replay.replay_one(entry, batch)["input_sha256"]) == 64
    assert stats["unique_graphs"] - before == 4
