"""Recorded device ops rebuilt and run (CPU torch): every op of a real recording (the small Wan
DiT + VAE of fixtures/models) replays, each tensor with its recorded strides and offset, an
index stays in range, an in-place op gets fresh inputs per launch."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import import_or_skip

from ncu_classify.capture.shapes import load_shapes


@pytest.fixture(scope="module")
def recorded_ops(wan_recording: Path) -> list:
    ops = load_shapes(wan_recording).recorded.ops  # type: ignore[union-attr]
    assert len(ops) == 211
    return ops


def test_every_recorded_op_replays_with_its_layout(recorded_ops: list) -> None:
    import torch

    from ncu_classify.capture.replay_ops import build_value, prepare

    for number, op in enumerate(recorded_ops):
        launch = prepare(op.op, op.args, op.kwargs, seed=number, device="cpu")()
        launch()  # raises if the op does not take what was recorded
        gen = torch.Generator().manual_seed(number)
        for spec, built in zip(op.args, (build_value(a, gen, 8, "cpu") for a in op.args),
                               strict=True):  # fmt: skip
            if isinstance(spec, dict) and "tensor" in spec:
                assert list(built.stride()) == spec["tensor"]["strides"], op.id
                assert built.storage_offset() == spec["tensor"]["offset"], op.id


def test_an_index_stays_in_range_and_an_inplace_op_starts_fresh(tmp_path: Path) -> None:
    torch = import_or_skip("torch")
    from ncu_classify.capture.replay_ops import NotReplayable, prepare

    table = {"tensor": {"shape": [5, 3], "dtype": "float32", "strides": [3, 1], "offset": 0}}
    index = {"tensor": {"shape": [64], "dtype": "int64", "strides": [1], "offset": 0}}
    fresh = prepare("aten.index.Tensor", [table, [index]], {}, seed=7, device="cpu")
    assert fresh()().shape == (64, 3)  # 64 draws, each < 3 (the smallest size of the table)
    add = prepare("aten.add_.Scalar", [table, 1.0], {}, seed=7, device="cpu")
    first, second = add()(), add()()
    assert torch.equal(first, second)  # each launch on fresh inputs, not on the last output
    with pytest.raises(NotReplayable, match=r"aten\.no_such_op\.default: no such op overload"):
        prepare("aten.no_such_op.default", [], {}, seed=0, device="cpu")
    neg = {"tensor": {"shape": [2], "dtype": "float32", "strides": [-1], "offset": 1}}
    with pytest.raises(NotReplayable, match="negative strides"):
        prepare("aten.neg.default", [neg], {}, seed=0, device="cpu")()
