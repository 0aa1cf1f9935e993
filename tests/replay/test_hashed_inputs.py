"""Seeded inputs drawn by the counter-based hash (replay.inputs, `hashed_normal_v1`): the same
bytes from an independent pure-Python reading of the recipe, the statistics of a standard
normal, prefix-stable, and a recipe sha256 that moves with every part of the recipe.

Needs torch (CPU is enough); the GPU test in tests/gpu checks the bytes on the H200 equal these.
"""

from __future__ import annotations

import hashlib
import math
import struct

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

from ncu_classify.replay import inputs  # noqa: E402
from ncu_classify.replay.inputs import HashedDraws, hashed_normal, stream_keys  # noqa: E402

M32 = 0xFFFFFFFF


def _mix(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x5BD1E995) & M32
    return x ^ (x >> 16)


def _f32(value: float) -> float:
    """Round a Python float to float32, as one float32 operation does."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _reference(index: int, keys: tuple[int, int, int]) -> float:
    """The recipe read independently: pure Python integers, each float step rounded to f32."""
    first = _mix(_mix((index & M32) ^ keys[0]) ^ (index >> 32) ^ keys[1])
    second = _mix(first ^ keys[2])
    total = (first & 0xFFFF) + (first >> 16) + (second & 0xFFFF) + (second >> 16)
    uniform_sum = _f32(float(total * 2 + 4) * 2.0**-17)
    return _f32(_f32(uniform_sum - 2.0) * _f32(math.sqrt(3.0)))


def test_values_equal_a_pure_python_reading_of_the_recipe() -> None:
    keys = stream_keys(7, 2)
    drawn = hashed_normal(3000, keys, "cpu").tolist()
    assert drawn == [_reference(i, keys) for i in range(3000)]


def test_indices_beyond_32_bits_use_the_high_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """Element 2**32 + i must not repeat element i (tensors of 4 G elements and more)."""
    keys = stream_keys(0, 0)
    index = torch.tensor([5, (1 << 32) + 5], dtype=torch.int64)
    first = inputs._mix(inputs._mix((index & M32) ^ keys[0]) ^ (index >> 32) ^ keys[1])
    assert first.tolist() == [
        _mix(_mix(5 ^ keys[0]) ^ 0 ^ keys[1]),
        _mix(_mix(5 ^ keys[0]) ^ 1 ^ keys[1]),
    ]
    assert first[0] != first[1]


def test_chunks_join_without_a_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "CHUNK", 1000)
    keys = stream_keys(0, 1)
    chunked = hashed_normal(2500, keys, "cpu").tolist()
    assert chunked == [_reference(i, keys) for i in range(2500)]


def test_a_standard_normal_within_its_bounds() -> None:
    values = hashed_normal(1_000_000, stream_keys(0, 0), "cpu")
    assert abs(values.mean().item()) < 0.005
    assert abs(values.std().item() - 1.0) < 0.005
    assert values.abs().max().item() <= 2 * math.sqrt(3.0)
    lag = torch.corrcoef(torch.stack([values[:-1], values[1:]]))[0, 1].item()
    assert abs(lag) < 0.005
    # Irwin-Hall with four terms: P(|z| > 2) = 0.0414 (a plain normal: 0.0455)
    assert 0.039 < (values.abs() > 2).float().mean().item() < 0.044


def test_draws_are_prefix_stable_and_differ_by_position() -> None:
    long = hashed_normal(5000, stream_keys(0, 0), "cpu")
    assert torch.equal(hashed_normal(100, stream_keys(0, 0), "cpu"), long[:100])
    assert not torch.equal(hashed_normal(100, stream_keys(0, 1), "cpu"), long[:100])
    assert not torch.equal(hashed_normal(100, stream_keys(1, 0), "cpu"), long[:100])


def test_a_shape_draws_scaled_typed_tensors_and_names_its_recipe() -> None:
    draws = HashedDraws(0, "cpu")
    x, w = draws.all([((64, 32), "bf16", 1.0), ((16, 32), "bf16", 32**-0.5)])
    assert (x.dtype, tuple(x.shape), w.dtype, tuple(w.shape)) == (
        torch.bfloat16, (64, 32), torch.bfloat16, (16, 32)
    )  # fmt: skip
    plain = hashed_normal(16 * 32, stream_keys(0, 1), "cpu").reshape(16, 32)
    assert torch.equal(w, (plain * 32**-0.5).to(torch.bfloat16))
    recipe = "hashed_normal_v1 seed=0\n[64, 32] bf16 1.0\n[16, 32] bf16 0.1767766952966369"
    assert draws.finish([x, w]) == hashlib.sha256(recipe.encode()).hexdigest()
    other = HashedDraws(0, "cpu")
    other.all([((64, 32), "bf16", 1.0), ((16, 32), "fp16", 32**-0.5)])
    assert other.finish([]) != draws.finish([])
    # the bytes themselves, pinned: a change of the generator must rename it
    assert hashlib.sha256(x.view(torch.uint8).numpy().tobytes()).hexdigest() == GOLDEN_X


GOLDEN_X = "5b9c7c050de6225e2e71ce86cf4f5ddde63688fa10723b51ca6dceb6fa926d2c"
