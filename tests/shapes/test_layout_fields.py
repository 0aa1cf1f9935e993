"""A typed shape's `layout` and attention's `mask` and `scale` as a hand-edited shapes file may
give them: dims the op would not take (attention's q/k/v or a conv's input as other dims of
the same elements, which SDPA would run as another attention under the same id) and a mask
or scale SDPA refuses or that makes no attention are refused as the file is read, naming the
file, its line and the field; the dims a linear flattens are taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncu_classify.core.errors import ShapesError
from ncu_classify.shapes.attention import AttentionShape
from ncu_classify.shapes.file import load_shapes
from ncu_classify.shapes.ops import LinearShape

ATTENTION = ('{op: "attention", backend: "sdpa", batch: 2, heads: 2, head_dim: 4, q_len: 6,'
             ' valid_keys: 6, dtype: "%s", %s}')  # fmt: skip
LINEAR = '{op: "linear", M: 3, N: 5, K: 8, dtype: "fp32", bias: true, layout: {%s}}'
QUERY = 'layout: {"query": {"shape": [2, 6, 2, 4], "strides": [48, 8, 4, 1]}}'
MASK = 'mask: {"shape": [2, 1, 1, 6], "dtype": "%s", "strides": [6, 6, 6, 1]}'


def _file(tmp_path: Path, shape: str) -> Path:
    path = tmp_path / "shapes.yaml"
    path.write_text(f"stages:\n  s:\n    - {shape}\n")
    return path


@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        # all three as (batch, queries, heads, dim): SDPA would run 6 heads of 2 queries
        (ATTENTION % ("fp32", QUERY),
         "3:7: stages.s.0: Value error, layout.query: dims [2, 6, 2, 4] are not the [2, 2, 6, 4]"
         " input's"),
        ('{op: "conv2d", input: [1, 4, 5, 5], weight: [6, 4, 3, 3], dtype: "fp32",'
         ' layout: {"input": {"shape": [4, 1, 5, 5], "strides": [25, 25, 5, 1]}}}',
         "layout.input: dims [4, 1, 5, 5] are not the [1, 4, 5, 5] input's"),
        (LINEAR % '"x": {"shape": [2, 12], "strides": [12, 1]}',
         "layout.x: dims [2, 12] are not the [3, 8] input's"),
        (LINEAR % '"weight": {"shape": [8, 5], "strides": [5, 1]}',
         "layout.weight: dims [8, 5] are not the [5, 8] input's"),
        (ATTENTION % ("fp32", MASK % "fp16"),
         "Value error, an fp16 mask on fp32 attention"),
        (ATTENTION % ("fp32", "scale: .nan"),
         "3:115: stages.s.0.scale: Input should be a finite number"),
        (ATTENTION % ("bf16", "scale: .inf"), "stages.s.0.scale: Input should be a finite number"),
    ],
)  # fmt: skip
def test_a_layout_mask_or_scale_the_op_cannot_take_is_refused(
    tmp_path: Path, shape: str, problem: str
) -> None:
    path = _file(tmp_path, shape)
    with pytest.raises(ShapesError) as error:
        load_shapes(path)
    assert str(error.value).startswith(f"{path}:") and problem in str(error.value)
    assert "\n" not in str(error.value)


def test_the_dims_a_linear_flattens_and_a_float32_mask_are_taken(tmp_path: Path) -> None:
    """A (batch, tokens, K) input and a (1, N) bias (addmm's) are a linear's own; SDPA adds a
    float32 mask to bf16 scores as it does a bf16 one."""
    x = '"x": {"shape": [3, 1, 8], "strides": [1, 1, 3]}'
    bias = '"bias": {"shape": [1, 5], "strides": [10, 2]}'
    [linear] = load_shapes(_file(tmp_path, LINEAR % f"{x}, {bias}")).entries()
    assert isinstance(linear.shape, LinearShape) and linear.shape.layout is not None
    assert {k: v.shape for k, v in linear.shape.layout.items()} == {"x": [3, 1, 8], "bias": [1, 5]}
    assert linear.shape.inputs()[0][0] == (24,)  # the storage the transposed view reaches
    for dtype in ("fp32", "bf16", "bool"):
        [attention] = load_shapes(_file(tmp_path, ATTENTION % ("bf16", MASK % dtype))).entries()
        assert isinstance(attention.shape, AttentionShape) and attention.shape.mask is not None
        assert attention.shape.mask.dtype == dtype


@pytest.mark.parametrize(
    "written", ["dropout_p: 0", "enable_gqa: false", "dropout_p: 0.0, enable_gqa: false"]
)
def test_sdpa_defaults_written_out_keep_the_plain_id(tmp_path: Path, written: str) -> None:
    """Dropout 0 and enable_gqa false are what SDPA does without them: the shape's id and its
    fields are the plain shape's; dropout 0.1 and enable_gqa true still tag it."""
    [plain] = load_shapes(_file(tmp_path, ATTENTION % ("bf16", ""))).entries()
    [given] = load_shapes(_file(tmp_path, ATTENTION % ("bf16", written))).entries()
    assert given.shape.key() == plain.shape.key() == "sdpa:self_b2_h2_d4_q6_k6:bf16"
    assert isinstance(given.shape, AttentionShape)
    assert given.shape.dropout_p is None and given.shape.enable_gqa is None
    for tagging in ("dropout_p: 0.1", "enable_gqa: true"):
        [tagged] = load_shapes(_file(tmp_path, ATTENTION % ("bf16", tagging))).entries()
        assert tagged.shape.key() != plain.shape.key()
