"""record: typed shapes as the program ran them (CPU torch). A 1x1x1 conv3d fed a frames-first
view (`permute`) and a slice with a storage offset keeps each input's strides and offset, the
same conv on a contiguous tensor keeps none (its id as before); SDPA keeps its boolean padding
mask (broadcast over heads and queries) and its scale; a linear fed a transposed view keeps the
program's dims (tests/helpers_layouts.py). Written as a shapes file and read back with
load_shapes, as recorded. The GPU check's program, fixtures/models/record_strided_conv.py, run
tiny through `ncu-classify record`, keeps its convs' layouts the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, import_or_skip
from helpers_layouts import ATTENTION, CONV, record_net

from ncu_classify.shapes.file import load_shapes

import_or_skip("torch")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The recording read back: {group id: shape}."""
    path = record_net(tmp_path_factory.mktemp("layouts") / "net.yaml")
    return {e.group: e.shape for e in load_shapes(path).entries() if e.shape.op != "aten"}


def test_a_strided_conv_input_keeps_its_strides_and_offset(recorded: dict) -> None:
    convs = {g: s for g, s in recorded.items() if s.op == "conv3d"}
    assert len(convs) == 3  # two layouts and the plain one: three ids
    assert recorded[CONV].layout is None  # the contiguous input: as before
    laid = {
        g: (s.layout["input"].strides, s.layout["input"].offset, set(s.layout))
        for g, s in convs.items()
        if g != CONV
    }
    assert sorted(laid.values()) == [
        ([1152, 36, 288, 6, 1], 0, {"input"}),  # frames-first: channels 36 apart, frames 288
        ([1440, 180, 36, 6, 1], 36, {"input"}),  # frames 1..4 of 5: one frame (36) in
    ]
    assert all(g.startswith(f"{CONV}:strided:h") for g in laid)  # the id tells them apart
    # the storage the replay draws reaches the last element the view reads
    spans = sorted(s.inputs()[0][0] for g, s in convs.items() if g != CONV)
    assert spans == [(1152,), (1440,)]
    assert recorded[CONV].inputs()[0][0] == (1, 8, 4, 6, 6)


def test_sdpa_keeps_its_padding_mask_and_scale(recorded: dict) -> None:
    assert recorded[ATTENTION].mask is None and recorded[ATTENTION].scale is None
    [(group, masked)] = [(g, s) for g, s in recorded.items() if s.op == "attention" and s.mask]
    assert group.startswith(f"{ATTENTION}:mask-bool:scale:h")
    mask = masked.mask
    # (batch, 1 head, queries, keys): broadcast over heads by size, over queries by stride 0
    assert (mask.shape, mask.dtype, mask.strides, mask.offset) == (
        [2, 1, 12, 12], "bool", [12, 12, 0, 1], 0,
    )  # fmt: skip
    assert masked.scale == 0.5 and masked.dropout_p is None and masked.layout is None
    assert mask.keys_attended() == 9  # the replay's pattern: the last quarter is padding
    # the mask read once per distinct element: 2 rows of 12 keys
    assert masked.nominal_bytes() - recorded[ATTENTION].nominal_bytes() == 24
    assert "mask" not in (masked.note or "")  # no note says the mask is dropped any more


def test_a_linear_on_a_transposed_view_keeps_the_programs_dims(recorded: dict) -> None:
    [linear] = [s for s in recorded.values() if s.op == "linear"]
    assert (linear.M, linear.N, linear.K) == (48, 16, 16)
    x = linear.layout["x"]
    assert (x.shape, x.strides, x.offset) == ([2, 12, 2, 16], [384, 16, 192, 1], 0)
    assert set(linear.layout) == {"x"}  # the weight and bias are plain


def test_a_layout_that_does_not_fit_is_refused_naming_the_input() -> None:
    from pydantic import ValidationError

    from ncu_classify.shapes.ops import Conv3dShape

    conv = {"op": "conv3d", "input": [1, 8, 4, 6, 6], "weight": [16, 8, 1, 1, 1]}
    with pytest.raises(ValidationError, match=r"layout\.input: 4 strides for dims"):
        Conv3dShape.model_validate({**conv, "layout": {"input": {"strides": [1, 2, 3, 4]}}})
    with pytest.raises(ValidationError, match=r"layout\.bias: no such input"):
        Conv3dShape.model_validate({**conv, "layout": {"bias": {"strides": [1]}}})


def test_a_laid_out_id_is_not_read_back_as_a_plain_shape(recorded: dict) -> None:
    """A report read without its manifest names a plain shape by its id; a strided or masked
    one, whose id holds a digest, is not taken for the plain shape of the same dims."""
    from ncu_classify.verdicts.group_ids import parse_group_id

    plain = parse_group_id(CONV)
    assert plain is not None and plain.shape.layout is None and plain.group == CONV
    assert parse_group_id(ATTENTION) is not None  # the unmasked attention
    laid = [g for g, s in recorded.items() if s.op in ("conv3d", "attention")]
    laid = [g for g in laid if g not in (CONV, ATTENTION)]
    assert len(laid) == 3 and [parse_group_id(g) for g in laid] == [None] * 3


def test_program_moves_keep_a_layout_and_a_mask_consistent(recorded: dict) -> None:
    """`try --program`: bf16 turns an fp32 additive mask bf16 with the attention (SDPA takes
    a float mask of the query's dtype only); channels-last drops a conv's strided input
    layout (the move's premise is channels-last tensors)."""
    from ncu_classify.tries.program import changed_shape

    [masked] = [s for s in recorded.values() if s.op == "attention" and s.mask]
    additive = masked.model_copy(update={"mask": masked.mask.model_copy(update={"dtype": "fp32"})})
    moved = changed_shape(additive, "bf16")
    assert (moved.dtype, moved.mask.dtype, moved.mask.strides) == ("bf16", "bf16", [12, 12, 0, 1])
    assert changed_shape(masked, "bf16").mask.dtype == "bool"
    [strided, *_] = [s for g, s in recorded.items() if s.op == "conv3d" and g != CONV]
    last = changed_shape(strided, "channels_last")
    assert last.memory_format == "channels_last_3d" and last.layout is None
    assert changed_shape(strided, "bf16").layout == strided.layout


def test_the_strided_conv_program_records_its_three_layouts(tmp_path: Path) -> None:
    """reports/fidelity/device_fidelity.sh's program, 1x8x2x6x6 on the CPU: a frames-first
    view (channels 36 apart, frames 288), frames 1..2 of a 3-frame clip (one frame, 36, in;
    channels 108 apart) and a contiguous input (no layout, the plain id)."""
    from ncu_classify.cli.entry import run

    out = tmp_path / "strided.yaml"
    script = ROOT / "fixtures" / "models" / "record_strided_conv.py"
    argv = ["record", "-o", str(out), "--", "python", str(script), "--device", "cpu"]
    assert run([*argv, "--frames", "2", "--height", "6", "--width", "6", "--channels", "8"]) == 0
    convs = [e for e in load_shapes(out).entries() if e.shape.op == "conv3d"]
    plain = "convs:conv3d:in1x8x2x6x6_w8x8x1x1x1_s1x1x1_p0x0x0:fp32:tf32:bias"
    got = [
        (e.shape.layout and {k: (v.strides, v.offset) for k, v in e.shape.layout.items()})
        for e in convs
    ]
    assert got == [
        {"input": ([576, 36, 288, 6, 1], 0)},
        {"input": ([864, 108, 36, 6, 1], 36)},
        None,
    ]
    assert [e.group == plain for e in convs] == [False, False, True]
    assert all(e.group.startswith(f"{plain}:strided:h") for e in convs[:2])
    assert all(e.shape.calls == 1 and e.shape.bias for e in convs)


def test_a_contiguous_slice_keeps_its_offset_only_where_it_misaligns_the_start() -> None:
    """`x[1:]` of rows of 6 fp32 starts 24 bytes in (vectorized kernels need 16-byte starts):
    its offset is kept; `x[2:]` starts 48 bytes in, aligned, and stays plain (its id as
    before)."""
    import torch

    from ncu_classify.record.calls import _lay_out

    x = torch.randn(5, 6)
    for rows, kept in ((1, {"x": {"strides": [6, 1], "offset": 6}}), (2, {})):
        shape: dict = {}
        view = x[rows:]
        _lay_out(shape, {"x": (view, tuple(view.shape))})
        assert shape.get("layout", {}) == kept
