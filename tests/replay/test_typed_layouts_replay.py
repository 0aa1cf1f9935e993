"""replay: typed shapes rebuilt as the program ran them (CPU torch, CUDA calls stubbed out). The
recording of tests/helpers_layouts.py replays each conv3d, linear and SDPA with the inputs'
recorded dims, strides and storage offsets and SDPA's padding mask of the recorded layout; a
plain shape replays as before (its drawn inputs hash as the code before layouts hashed them);
an old shapes file without the new fields loads and replays contiguous and unmasked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import import_or_skip
from helpers_layouts import ATTENTION, CONV, record_net

from ncu_classify.shapes.file import ShapeEntry, load_shapes

torch = import_or_skip("torch")

from ncu_classify.replay import target as replay  # noqa: E402
from ncu_classify.replay.protocol import BatchFile  # noqa: E402

BATCH = BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=[])
# the input_sha256 of the plain shapes as the replay before layouts (commit 290f115) gave them
BEFORE = {
    CONV: "8f23b672779e0470e52b47387dc31c53d3664beb6ce3f60bfe711da8d9d793aa",
    ATTENTION: "3a786bba4856d7b58c7694db01d8165e2b9307944b8a7c6caf00e8e21f9564f3",
}
Calls = list[tuple[str, tuple[Any, ...], dict[str, Any]]]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """The replay loop on the CPU; every F.conv3d, F.conv2d, F.linear and SDPA call it makes
    is kept (name, args, kwargs) and then run for real."""
    for name, stub in (("empty_cache", lambda: None), ("synchronize", lambda: None)):
        monkeypatch.setattr(torch.cuda, name, stub)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)
    monkeypatch.setattr(replay, "DRAW_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    seen: Calls = []
    for name in ("conv3d", "conv2d", "linear", "scaled_dot_product_attention"):
        real = getattr(torch.nn.functional, name)

        def watching(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            seen.append((_name, args, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(torch.nn.functional, name, watching)
    return seen


@pytest.fixture(scope="module")
def entries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ShapeEntry]:
    path = record_net(tmp_path_factory.mktemp("layouts") / "net.yaml")
    return {e.group: e for e in load_shapes(path).entries() if e.shape.op != "aten"}


def _layout(t: Any) -> tuple[list[int], list[int], int]:
    return list(t.shape), list(t.stride()), t.storage_offset()


def test_a_strided_conv_input_is_built_with_the_programs_strides_and_offset(
    entries: dict[str, ShapeEntry], calls: Calls
) -> None:
    built = {}
    for group, entry in entries.items():
        if entry.shape.op == "conv3d":
            fields = replay.replay_one(entry, BATCH)
            name, args, _ = calls[-1]  # the measured launch
            assert name == "conv3d" and len(fields["input_sha256"]) == 64
            built[group] = (_layout(args[0]), _layout(args[1]), fields["input_sha256"])
    plain = built.pop(CONV)
    assert plain == (
        ([1, 8, 4, 6, 6], [1152, 144, 36, 6, 1], 0), ([16, 8, 1, 1, 1], [8, 1, 1, 1, 1], 0),
        BEFORE[CONV],
    )  # fmt: skip
    assert sorted(x for x, _, _ in built.values()) == [
        ([1, 8, 4, 6, 6], [1152, 36, 288, 6, 1], 0),  # the frames-first view
        ([1, 8, 4, 6, 6], [1440, 180, 36, 6, 1], 36),  # frames 1..4 of a 5-frame clip
    ]
    assert all(w == plain[1] for _, w, _ in built.values())  # the weight stays plain
    assert len({sha for _, _, sha in built.values()} | {plain[2]}) == 3  # drawn apart


def test_the_padding_mask_is_passed_with_its_layout_and_the_last_keys_masked(
    entries: dict[str, ShapeEntry], calls: Calls
) -> None:
    [masked] = [e for g, e in entries.items() if g.startswith(f"{ATTENTION}:mask-bool")]
    replay.replay_one(masked, BATCH)
    name, (q, k, v), kwargs = calls[-1]
    assert name == "scaled_dot_product_attention" and _layout(k) == _layout(v) == _layout(q)
    assert set(kwargs) == {"attn_mask", "scale", "is_causal"} and kwargs["scale"] == 0.5
    mask = kwargs["attn_mask"]
    assert mask.dtype == torch.bool and _layout(mask) == ([2, 1, 12, 12], [12, 12, 0, 1], 0)
    # every row attends keys 0..8 and masks 9..11: trailing padding, as T5 pads text
    assert torch.equal(mask, (torch.arange(12) < 9).expand(2, 1, 12, 12))
    assert _layout(q) == ([2, 2, 12, 16], [384, 192, 16, 1], 0)
    fields = replay.replay_one(entries[ATTENTION], BATCH)  # the plain one: as before
    _, _, plain = calls[-1]
    assert plain == {"is_causal": False} and fields["input_sha256"] == BEFORE[ATTENTION]


def test_an_additive_mask_masks_with_the_lowest_finite_value() -> None:
    from ncu_classify.replay.layouts import attention_mask
    from ncu_classify.shapes.layouts import AttentionMask

    spec = AttentionMask(shape=[1, 1, 2, 8], dtype="bf16", strides=[8, 8, 0, 1], attended=3)
    mask = attention_mask(spec, "cpu")
    assert mask.dtype == torch.bfloat16 and mask.stride() == (8, 8, 0, 1)
    lowest = torch.finfo(torch.bfloat16).min
    assert mask[0, 0, 1].tolist() == [0.0] * 3 + [lowest] * 5


def test_a_linear_on_a_transposed_view_is_replayed_on_that_view(
    entries: dict[str, ShapeEntry], calls: Calls
) -> None:
    [linear] = [e for e in entries.values() if e.shape.op == "linear"]
    replay.replay_one(linear, BATCH)
    name, (x, w, b), _ = calls[-1]
    assert name == "linear" and _layout(x) == ([2, 12, 2, 16], [384, 16, 192, 1], 0)
    assert _layout(w) == ([16, 16], [16, 1], 0) and _layout(b) == ([16], [1], 0)


def test_recorded_inputs_are_copied_into_the_programs_layout(tmp_path: Path, calls: Calls) -> None:
    """`record --save-inputs` keeps contiguous values: the replay writes them into a view of
    the recorded layout, values unchanged."""
    from ncu_classify.replay.inputs import RecordedInputs
    from ncu_classify.replay.layouts import placed
    from ncu_classify.shapes.ops import CastShape

    values = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    torch.save([values], tmp_path / "x.pt")
    layout = {"x": {"strides": [1, 8, 2], "offset": 5}}
    shape = CastShape.model_validate({"op": "cast", "shape": [2, 3, 4], "from": "fp32",
                                      "to": "bf16", "layout": layout})  # fmt: skip
    given, (x,) = placed(shape, RecordedInputs(tmp_path / "x.pt"))
    assert given[0] is not x and _layout(x) == ([2, 3, 4], [1, 8, 2], 5)
    assert torch.equal(x, values)


def test_an_old_shapes_file_replays_contiguous_and_unmasked(
    wan_shapes: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Wan 14B recording (written before layouts): no typed shape has a layout or a mask;
    each draws its plain inputs, reads as its H200 capture's manifest recorded it (the same
    group ids and parameters, no new field); a linear takes its inputs as drawn and SDPA gets
    no mask, scale or dropout."""
    import json

    from helpers import ROOT

    from ncu_classify.capture.manifest import manifest_shape

    typed = [e for e in load_shapes(wan_shapes).entries() if e.shape.op != "aten"]
    assert len(typed) == 44 and all(e.shape.layout is None for e in typed)
    assert all(e.shape.inputs() == e.shape.plain_inputs() for e in typed)
    attention = [e for e in typed if e.shape.op == "attention"]
    assert len(attention) == 3 and all(e.shape.mask is None for e in attention)
    manifest = json.loads((ROOT / "fixtures/record_h200_wan14b/manifest.json").read_text())
    captured = {s["group"]: s["shape_parameters"] for s in manifest["shapes"]}
    both = [e for e in typed if e.group in captured]
    assert len(both) == 43  # the same recording but one shape, captured on the H200
    for entry in both:
        params = manifest_shape(entry).shape_parameters
        assert {k: v for k, v in params.items() if k != "compile"} == captured[entry.group]

    class Zeros:
        """Broadcast zeros of each plain input's dims: the op's arguments, no memory."""

        def all(self, specs: list) -> list:
            return [torch.zeros((), dtype=replay.DTYPES[d]).expand(dims) for dims, d, _ in specs]

    for name in ("scaled_dot_product_attention", "linear"):
        monkeypatch.setattr(torch.nn.functional, name,
                            lambda *a, _n=name, **k: calls.append((_n, a, k)))  # fmt: skip
    for entry in [e for e in typed if e.shape.op in ("attention", "linear")]:
        _, op = replay.BUILDERS[type(entry.shape)](entry.shape, Zeros())
        op()
        name, args, kwargs = calls[-1]
        dims = [d for d, _, _ in entry.shape.plain_inputs()]
        assert [tuple(a.shape) for a in args if a is not None] == dims
        assert all(set(a.stride()) == {0} for a in args if a is not None)  # as drawn
        assert kwargs == ({"is_causal": False} if name != "linear" else {})


def test_recorded_inputs_are_copied_into_an_expanded_layout(tmp_path: Path, calls: Calls) -> None:
    """A conv fed `x.expand(3, ...)` (batch stride 0) with `record --save-inputs`: the replay
    writes the kept values where the view reads them (a stride-0 view cannot be written)."""
    from ncu_classify.replay.inputs import RecordedInputs
    from ncu_classify.replay.layouts import placed
    from ncu_classify.shapes.ops import Conv2dShape

    one = torch.arange(100, dtype=torch.float32).reshape(1, 4, 5, 5)
    values = [one.expand(3, 4, 5, 5).contiguous(), torch.ones(6, 4, 3, 3)]
    torch.save(values, tmp_path / "x.pt")
    layout = {"input": {"strides": [0, 25, 5, 1]}}  # batch broadcast
    shape = Conv2dShape.model_validate({"op": "conv2d", "input": [3, 4, 5, 5],
                                        "weight": [6, 4, 3, 3], "layout": layout})  # fmt: skip
    _, (x, w) = placed(shape, RecordedInputs(tmp_path / "x.pt"))
    assert _layout(x) == ([3, 4, 5, 5], [0, 25, 5, 1], 0) and x.untyped_storage().nbytes() == 400
    assert torch.equal(x, values[0]) and torch.equal(w, values[1])


def test_recorded_inputs_are_copied_into_overlapping_windows(tmp_path: Path, calls: Calls) -> None:
    """A linear fed `unfold`'s windows (rows 2 apart, 4 long: each shares 2 with the next):
    torch writes such a view (its overlap is no broadcast) with the values the program had."""
    from ncu_classify.replay.inputs import RecordedInputs
    from ncu_classify.replay.layouts import placed
    from ncu_classify.shapes.ops import LinearShape

    windows = torch.arange(10, dtype=torch.float32).unfold(0, 4, 2)  # [4, 4], strides (2, 1)
    torch.save([windows.contiguous(), torch.ones(3, 4)], tmp_path / "x.pt")
    shape = LinearShape.model_validate({"op": "linear", "M": 4, "N": 3, "K": 4, "dtype": "fp32",
                                        "layout": {"x": {"strides": [2, 1]}}})  # fmt: skip
    _, (x, _) = placed(shape, RecordedInputs(tmp_path / "x.pt"))
    assert _layout(x) == ([4, 4], [2, 1], 0) and x.untyped_storage().nbytes() == 40
    assert torch.equal(x, windows)
