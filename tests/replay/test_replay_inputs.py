"""Replay inputs: seeded on the CPU, reproducible anywhere, reused between consecutive shapes.

Needs torch (CPU is enough); skipped where torch is not installed, unless
NCU_CLASSIFY_REQUIRE_TORCH is set (CI), where its absence fails the run.
"""

from __future__ import annotations

import json
import os

import pytest
from helpers import SMOKE, import_or_skip

torch = import_or_skip("torch")

from ncu_classify.replay.inputs import DTYPES, InputCache  # noqa: E402
from ncu_classify.replay.protocol import BatchFile  # noqa: E402


def _plain(seed: int, specs: list[tuple[list[int], str, float]]) -> list:
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(shape, generator=gen) * scale).to(DTYPES[dtype])
        for shape, dtype, scale in specs
    ]


def test_draws_equal_a_plain_seeded_sequence_and_are_reused() -> None:
    cache = InputCache()
    specs = [([64, 32], "bf16", 1.0), ([16, 32], "bf16", 32**-0.5)]
    first = cache.start(0)
    made = [first(*spec) for spec in specs]
    sha = first.finish(made)
    for a, b in zip(made, _plain(0, specs), strict=True):
        assert torch.equal(a, b)
    second = cache.start(0)
    again = [second(*spec) for spec in specs]
    assert all(x is y for x, y in zip(again, made, strict=True))  # reused, not redrawn
    assert second.finish(again) == sha


def test_partial_reuse_fast_forwards_the_generator() -> None:
    """Same first tensor, different second: the second must still match a fresh draw."""
    cache = InputCache()
    one = cache.start(0)
    one.finish([one([8, 8], "fp32"), one([4, 4], "fp32")])
    two = cache.start(0)
    got = [two([8, 8], "fp32"), two([6, 4], "fp32")]
    for a, b in zip(got, _plain(0, [([8, 8], "fp32", 1.0), ([6, 4], "fp32", 1.0)]), strict=True):
        assert torch.equal(a, b)
    from ncu_classify.replay.inputs import tensor_sha256 as _hash

    assert two.finish(got) == _hash(_plain(0, [([8, 8], "fp32", 1.0), ([6, 4], "fp32", 1.0)]))


def test_same_hash_as_the_h200_capture() -> None:
    """The bf16 GEMM inputs hashed on the H200 (torch 2.11) hash the same here."""
    cache = InputCache()
    draw = cache.start(0)
    m, n, k = 4680, 5120, 5120
    tensors = [draw([m, k], "bf16"), draw([n, k], "bf16", k**-0.5), draw([n], "bf16")]
    smoke = json.loads((SMOKE / "manifest.json").read_text())["shapes"][0]
    assert smoke["group"] == "dit:linear:M4680_N5120_K5120:bf16:bias"
    assert draw.finish(tensors) == smoke["input_sha256"]


def test_builders_replay_small_shapes_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The op builders and the replay loop, run on the CPU (CUDA calls stubbed out)."""
    from ncu_classify.replay import target as replay
    from ncu_classify.shapes.file import ShapeEntry

    monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(replay, "DRAW_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    shapes = [
        {"op": "linear", "M": 8, "N": 16, "K": 32, "dtype": "fp32", "bias": True},
        {"op": "conv3d", "input": [1, 4, 3, 8, 8], "weight": [8, 4, 3, 3, 3]},
        {"op": "cast", "shape": [2, 3], "from": "fp32", "to": "bf16"},
        {
            "op": "attention",
            "backend": ["flash_attn", "sdpa_efficient"],
            "heads": 2,
            "head_dim": 16,
            "q_len": 8,
            "valid_keys": 8,
            "allocated_keys": 12,
            "dtype": "fp32",
        },
    ]
    entries = [
        ShapeEntry.model_validate({"stage": "s", "group": f"s:{i}", "shape": shape})
        for i, shape in enumerate(shapes)
    ]
    batch = BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=[])
    results = [replay.replay_one(entry, batch) for entry in entries[:3]]
    assert all(len(r["input_sha256"]) == 64 for r in results)
    assert [r["backend_used"] for r in results] == [None, None, None]
    # No backend of the preference list runs on a CPU: every reason is kept.
    with pytest.raises(replay.Unsupported) as info:
        replay.replay_one(entries[3], batch)
    assert str(info.value).startswith("flash_attn: backend flash_attn is not importable here")
    assert "; sdpa_efficient: " in str(info.value)


def test_repeats_are_launched_in_nested_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """--repeat: each measured launch sits in its own `repeat#N` range inside the shape's, an op
    that writes its arguments is reset outside both; a times batch draws on the device and
    hashes nothing (no CUDA here: the device draw is checked by its generator's device)."""
    from ncu_classify.replay import target as replay
    from ncu_classify.shapes.file import ShapeEntry

    events: list[str] = []
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(replay, "DRAW_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: events.append(f"+{name}"))
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: events.append("-"))
    entry = ShapeEntry.model_validate(
        {
            "stage": "s",
            "group": "s:0",
            "shape": {"op": "cast", "shape": [2, 3], "from": "fp32", "to": "bf16"},
        }
    )
    batch = BatchFile(
        seed=0, warmup=1, cudnn_benchmark=False, entries=[], launches=3, first_repeat=2
    )
    fields = replay.replay_one(entry, batch)
    assert fields["launches"] == 3 and len(fields["input_sha256"]) == 64
    assert events == [
        "+s:0", "+repeat#2", "-", "-", "+s:0", "+repeat#3", "-", "-", "+s:0", "+repeat#4", "-", "-"
    ]  # fmt: skip
    events.clear()
    single = replay.replay_one(
        entry, BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=[])
    )
    assert events == ["+s:0", "-"] and "launches" not in single  # the old report form
    draws = InputCache().start(0, "cuda")
    assert draws.finish([]) is None


def test_out_of_memory_is_recorded_and_the_batch_goes_on(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay loop under ncu: an OOM shape is a failed status line, the next shape runs."""
    from ncu_classify.replay import target as replay

    monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(replay, "DRAW_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    monkeypatch.setattr(replay, "environment", lambda: {"gpu_name": "cpu"})
    original = replay.BUILDERS[replay.LinearShape]

    def huge(shape, draw):  # type: ignore[no-untyped-def]
        if shape.M > 1000:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 GiB")
        return original(shape, draw)

    monkeypatch.setitem(replay.BUILDERS, replay.LinearShape, huge)
    batch = tmp_path / "b.json"
    entries = [
        {"stage": "dit", "group": "dit:big", "shape": {"op": "linear", "M": 4096, "N": 8, "K": 8}},
        {
            "stage": "dit",
            "group": "dit:small",
            "shape": {"op": "linear", "M": 8, "N": 8, "K": 8, "dtype": "fp32"},
        },
    ]
    batch.write_text(
        json.dumps({"seed": 0, "warmup": 1, "cudnn_benchmark": False, "entries": entries})
    )
    status = tmp_path / "s.jsonl"
    assert replay.replay_batch(batch, status) == 0
    lines = [json.loads(x) for x in status.read_text().splitlines()]
    assert [x.get("status") for x in lines] == [None, "failed", "ok"]
    assert lines[0]["kind"] == "env" and lines[0]["pid"] == os.getpid()
    assert lines[1]["error"] == ("out of memory: CUDA out of memory. Tried to allocate 512.00 GiB")
