"""Recorded device ops (`aten` shapes) rebuilt and run (CPU torch): every op of a real
recording (the small Wan DiT + VAE of fixtures/models) replays, each tensor with its recorded
strides and offset, and returns what the program's op returned; an index stays in range; an op
that writes its argument gives the same result on every launch once reset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import import_or_skip

from ncu_classify.shapes.aten import AtenShape
from ncu_classify.shapes.file import ShapeEntry, load_shapes


@pytest.fixture(scope="module")
def aten_entries(wan_recording: Path) -> list[ShapeEntry]:
    loaded = load_shapes(wan_recording)
    assert loaded.recorded is not None and loaded.recorded.ops == []  # all in the stages now
    entries = [e for e in loaded.entries() if e.shape.op == "aten"]
    assert len(entries) == 211
    return entries


class _Watched:
    """An op overload that keeps the arguments of each launch, then runs the real op."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self._schema = op._schema  # prepare reads which arguments the op writes
        self.launches: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.launches.append((args, kwargs))
        return self.op(*args, **kwargs)


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[_Watched]:
    """Every op `prepare` resolves from now on, watched (in order)."""
    import_or_skip("torch")
    from ncu_classify.replay import aten as replay_ops

    resolve, seen = replay_ops.resolve, []

    def watching(name: str) -> _Watched:
        seen.append(_Watched(resolve(name)))
        return seen[-1]

    monkeypatch.setattr(replay_ops, "resolve", watching)
    return seen


def _pairs(recorded: Any, built: Any) -> list[tuple[dict[str, Any], Any]]:
    """(recorded tensor spec, tensor the op received), through lists, in order."""
    if isinstance(recorded, dict) and "tensor" in recorded:
        return [(recorded["tensor"], built)]
    if isinstance(recorded, list):
        assert isinstance(built, (list, tuple)) and len(built) == len(recorded)
        return [p for r, b in zip(recorded, built, strict=True) for p in _pairs(r, b)]
    return []


@pytest.mark.needs("torch", "diffusers")
def test_every_recorded_op_replays_with_its_layout(
    aten_entries: list[ShapeEntry], watched: list[_Watched]
) -> None:
    """Each op receives tensors with the recorded shape, dtype, strides and storage offset,
    and returns tensors laid out as the recorded outputs."""
    import torch

    from ncu_classify.replay.aten import Storages, prepare

    storages = Storages()
    checked, strided, offset, broadcast, resets = 0, 0, 0, 0, []
    for number, entry in enumerate(aten_entries):
        shape = entry.shape
        assert isinstance(shape, AtenShape)
        prepared = prepare(shape, seed=number, device="cpu", storages=storages)
        result = prepared.run()  # raises if the op does not take what was recorded
        op = watched[-1]
        _, packet, overload = shape.overload.split(".")
        assert op.op is getattr(getattr(torch.ops.aten, packet), overload)
        [(args, kwargs)] = op.launches
        pairs = _pairs(shape.args, list(args))
        pairs += [p for k, v in shape.kwargs.items() for p in _pairs(v, kwargs[k])]
        assert len(pairs) == len(shape.tensors()), entry.group
        for spec, tensor in pairs:
            got = (list(tensor.shape), str(tensor.dtype).removeprefix("torch."))
            assert got == (spec["shape"], spec["dtype"]), entry.group
            assert list(tensor.stride()) == spec["strides"], entry.group
            assert tensor.storage_offset() == spec["offset"], entry.group
            assert tensor.device.type == "cpu"
            checked += 1
            strided += not tensor.is_contiguous()
            offset += spec["offset"] > 0
            broadcast += 0 in spec["strides"] and tensor.numel() > 1
        outputs = result if isinstance(result, (tuple, list)) else [result]
        outputs = [t for t in outputs if isinstance(t, torch.Tensor)]
        layout = [
            (
                list(t.shape),
                str(t.dtype).removeprefix("torch."),
                list(t.stride()),
                t.storage_offset(),
            )
            for t in outputs
        ]
        assert layout == [(o.shape, o.dtype, o.strides, o.offset) for o in shape.outputs], (
            entry.group
        )
        if prepared.reset is not None:
            resets.append(entry.group)
    # the layouts checked are the recording's own: views, offsets and expanded tensors
    assert (checked, strided, offset, broadcast) == (289, 66, 22, 17)
    assert resets == [
        "dit:aten.add_.Scalar:1x32x1:fp32",
        "dit:aten.copy_.default:1x32x12x64:fp32:strided",
        "dit:aten.copy_.default:1x32x12x64:fp32:strided:2",
        "dit:aten.add_.Scalar:1x16x1:fp32",
    ]  # the ops that write an argument, and only they


@pytest.mark.needs("torch")
def test_an_index_stays_in_range(watched: list[_Watched]) -> None:
    from ncu_classify.replay.aten import Storages, prepare

    table = {"tensor": {"shape": [5, 3], "dtype": "float32", "strides": [3, 1], "offset": 0}}
    index = {"tensor": {"shape": [64], "dtype": "int64", "strides": [1], "offset": 0}}
    shape = AtenShape(op="aten", overload="aten.index.Tensor", args=[table, [index]], calls=1)
    prepared = prepare(shape, seed=7, device="cpu", storages=Storages())
    assert prepared.reset is None  # reads only
    assert prepared.run().shape == (64, 3)
    [(args, _)] = watched[-1].launches
    drawn = args[1][0]
    # 64 draws, each < 3 (the smallest size of the table), not all alike
    assert drawn.shape == (64,) and int(drawn.min()) >= 0 and int(drawn.max()) < 3
    assert len(set(drawn.tolist())) == 3


@pytest.mark.needs("torch")
def test_an_inplace_op_gives_the_same_result_after_each_reset() -> None:
    import torch

    from ncu_classify.replay.aten import Storages, prepare

    table = {"tensor": {"shape": [5, 3], "dtype": "float32", "strides": [3, 1], "offset": 0}}
    shape = AtenShape(op="aten", overload="aten.add_.Scalar", args=[table, 1.0], calls=1)
    storages = Storages()
    prepared = prepare(shape, seed=7, device="cpu", storages=storages)
    assert prepared.reset is not None
    prepared.reset()
    first = prepared.run().clone()
    prepared.reset()
    second = prepared.run().clone()
    assert torch.equal(first, second)  # each launch on the drawn inputs, not on the last output
    third = prepared.run().clone()  # without a reset the op adds to its own output
    assert torch.allclose(third, second + 1.0) and not torch.equal(third, second)
    # the drawn storage itself is untouched: the same op prepared again starts from it
    again = prepare(shape, seed=7, device="cpu", storages=storages)
    assert again.input_sha256 == prepared.input_sha256
    assert torch.equal(again.run(), first)


@pytest.mark.needs("torch")
def test_what_cannot_be_replayed_says_why() -> None:
    from ncu_classify.replay.aten import NotReplayable, Storages, prepare

    unknown = AtenShape(op="aten", overload="aten.no_such_op.default", calls=1)
    with pytest.raises(NotReplayable, match=r"aten\.no_such_op\.default: no such op overload"):
        prepare(unknown, seed=0, device="cpu", storages=Storages())
    # every dtype a shapes file may name is drawn (an fp8 model's casts replay)
    fp8 = {"tensor": {"shape": [2], "dtype": "float8_e5m2", "strides": [1], "offset": 0}}
    cast = AtenShape(op="aten", overload="aten._to_copy.default", args=[fp8],
                     kwargs={"dtype": "float32"}, calls=1)  # fmt: skip
    assert prepare(cast, seed=0, device="cpu", storages=Storages()).run().dtype.is_floating_point


def test_a_dtype_or_stride_no_shapes_file_may_name_is_refused() -> None:
    """(no torch needed: the shapes file's own validation)"""
    from pydantic import ValidationError

    fp8 = {"tensor": {"shape": [2], "dtype": "float8_e5m2", "strides": [1], "offset": 0}}
    with pytest.raises(ValidationError, match="Input should be 'float64'"):
        AtenShape(op="aten", overload="aten.neg.default", calls=1,
                  args=[{"tensor": {**fp8["tensor"], "dtype": "uint64"}}])  # fmt: skip
    neg = {"tensor": {"shape": [2], "dtype": "float32", "strides": [-1], "offset": 1}}
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        AtenShape(op="aten", overload="aten.neg.default", args=[neg], calls=1)


def test_a_like_factory_moves_only_its_output() -> None:
    """zeros_like of the Wan 14B decode (fixtures/record_h200_wan14b): 9.6 MB written, no input
    read; its manifest, captured before, says 19.2 MB and the op then beat its speed of light."""
    import json

    from helpers import ROOT

    from ncu_classify.shapes.aten import AtenShape

    shapes = json.loads((ROOT / "fixtures" / "record_h200_wan14b" / "manifest.json").read_text())
    [recorded] = [s for s in shapes["shapes"] if s["group"].startswith("vae:aten.zeros_like")]
    params = {
        k: v
        for k, v in recorded["shape_parameters"].items()
        if k in ("overload", "args", "kwargs", "outputs")
    }
    shape = AtenShape.model_validate({"op": "aten", **params})
    assert recorded["nominal_bytes"] == 2 * 1 * 384 * 60 * 104 * 4
    assert shape.nominal_bytes() == 1 * 384 * 60 * 104 * 4
    mul = shape.model_copy(update={"overload": "aten.mul.Tensor"})
    assert mul.nominal_bytes() == recorded["nominal_bytes"]


@pytest.mark.needs("torch")
def test_a_chain_s_arguments_are_plain_python_as_torch_compile_traces_them() -> None:
    """A shapes file's flow mappings hold ruamel's own numbers (`{input: 0}` is a ScalarInt, an
    anchored `false` a ScalarBoolean): the chain replay hands torch.compile plain ones (torch
    2.11's dynamo refused to index a list with a ScalarInt: every compiled chain and region
    replayed in-process failed)."""
    from ruamel.yaml import YAML

    from ncu_classify.replay.chain import _plain

    loaded = YAML(typ="rt").load("[{input: 0}, 2.5, {ref: [1, 0]}, &f false, x, [3, 1.5e-3]]")
    assert type(loaded[0]["input"]).__name__ == "ScalarInt"  # (what a shapes file holds)
    plain = _plain(loaded)
    assert plain == [{"input": 0}, 2.5, {"ref": [1, 0]}, False, "x", [3, 0.0015]]

    def types(value: object) -> list[type]:
        if isinstance(value, dict):
            return [dict, *[t for v in value.values() for t in types(v)]]
        if isinstance(value, list):
            return [list, *[t for v in value for t in types(v)]]
        return [type(value)]

    assert set(types(plain)) == {list, dict, int, float, bool, str}
    assert plain[3] is False and type(plain[0]["input"]) is int
