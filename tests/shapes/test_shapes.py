"""The shapes file: validation with file:line errors, stable group ids, nominal FLOPs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.core.errors import ShapesError
from ncu_classify.shapes.file import load_shapes
from ncu_classify.shapes.ops import Conv3dShape, LinearShape


def test_smoke_file_group_ids_are_stable() -> None:
    entries = load_shapes(ROOT / "fixtures" / "shapes" / "smoke.yaml").entries()
    assert [e.group for e in entries] == [
        "dit:linear:M4680_N5120_K5120:bf16:bias",
        "dit:linear:M4680_N5120_K144:bf16:bias",
        "dit:linear:M3_N30720_K5120:bf16:bias",
        "vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32",
        "vae:conv3d:in1x384x4x122x54_w384x384x3x3x3_s1x1x1_p0x0x0:fp32:tf32:cl3d",
        "vae:conv3d:in1x192x2x120x52_w384x192x1x1x1_s1x1x1_p0x0x0:fp32:tf32",
        "attention:sdpa_cudnn:self_b1_h40_d128_q4680_k4680of29640:bf16",
        "attention:sdpa_flash:self_b1_h40_d128_q4680_k4680of29640:bf16",
        "attention:sdpa_cudnn:cross_b1_h40_d128_q4680_k512:bf16",
        "attention:flash_attn:self_b1_h40_d128_q4680_k4680of29640:bf16",
        "output:cast:1x3x13x480x832:fp32-bf16",
    ]


def test_nominal_flops_match_the_legacy_cards(legacy_path: Path) -> None:
    """2*M*N*K for linear, 2*out*Cin/groups*kT*kH*kW for conv3d, as the legacy cards say."""
    checked = 0
    for card in json.loads(legacy_path.read_text())["cards"]:
        params = card["shape_parameters"]
        if card["op"] == "aten.linear.default":
            shape = LinearShape(op="linear", **params)
        elif card["op"] == "aten.conv3d.default":
            shape = Conv3dShape(op="conv3d", **{k: v for k, v in params.items() if k != "output"})
            assert shape.output() == params["output"]
        else:
            continue
        assert shape.nominal_flops() == card["nominal_mac_flops"], card["group"]
        checked += 1
    assert checked == 29


def _shapes(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "shapes.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "stages:\n  dit:\n    - {op: linear, M: 0, N: 1, K: 1}\n",
            "3:20: stages.dit.0.M: Input should be greater than 0",
        ),
        (
            "stages:\n  dit:\n    - {op: linear, M: 1, N: 1, K: 1, dtype: int8}\n",
            "3:38: stages.dit.0.dtype: Input should be 'bf16', 'fp16' or 'fp32'",
        ),
        (
            "stages:\n  vae:\n    - op: conv3d\n      input: [1, 3, 4, 4, 4]\n"
            "      weight: [3, 2, 1, 1, 1]\n",
            "3:7: stages.vae.0: Value error, input channels 3 != weight in-channels 2 x groups 1",
        ),
        (
            "stages:\n  att:\n    - {op: attention, heads: 1, head_dim: 64, q_len: 8,"
            " valid_keys: 16, allocated_keys: 8}\n",
            "3:7: stages.att.0: Value error, allocated_keys 8 < valid_keys 16",
        ),
        ("stages:\n  x:\n    - {op: matmul}\n", "3:7: stages.x.0: Input tag 'matmul' found using"),
        (
            "stages:\n  dit:\n    - {op: linear, M: 1, N: 1, K: 1, colour: red}\n",
            "3:38: stages.dit.0.colour: Extra inputs are not permitted",
        ),
        (
            "stages:\n  dit:\n    - {op: linear, M: 1, N: 1, K: 1}\n    - {op: linear, M: 1, N: 1,"
            " K: 1}\n",
            "duplicate group id 'dit:linear:M1_N1_K1:bf16'",
        ),
        ("stages: {dit: [}\n", "invalid YAML"),
    ],
)
def test_bad_files_name_file_line_and_field(tmp_path: Path, body: str, where: str) -> None:
    path = _shapes(tmp_path, body)
    with pytest.raises(ShapesError) as info:
        load_shapes(path)
    message = str(info.value)
    assert message.startswith(str(path)) and where in message
    assert "\n" not in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ShapesError, match=r"nope.yaml: cannot read"):
        load_shapes(tmp_path / "nope.yaml")


def test_attention_and_cast_costs() -> None:
    entries = load_shapes(ROOT / "fixtures" / "shapes" / "smoke.yaml").entries()
    attn = entries[6].shape
    assert attn.nominal_flops() == 4 * 40 * 4680 * 4680 * 128
    cast = entries[-1].shape
    assert cast.nominal_flops() == 0
    assert cast.nominal_bytes() == 3 * 13 * 480 * 832 * (4 + 2)


COMMITTED_SHAPES = sorted(
    [*(ROOT / "fixtures").rglob("*.yaml"), *(ROOT / "reports" / "record").glob("*shapes.yaml.xz")]
)


@pytest.mark.parametrize("path", COMMITTED_SHAPES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_shape_is_written_as_it_was_read(path: Path) -> None:
    """A shape written from its model (`written`) holds exactly the keys it was given, in the
    order op, name, the op's own fields, the shared ones; and reads back as the same model."""
    import lzma

    from pydantic import TypeAdapter
    from ruamel.yaml import YAML

    from ncu_classify.shapes.file import Shape, ShapesFile

    data = path.read_bytes()
    text = (lzma.decompress(data) if path.suffix == ".xz" else data).decode("utf-8")
    raw = json.loads(json.dumps(YAML(typ="safe").load(text)))
    shapes = ShapesFile.model_validate(raw, strict=False)
    adapter: TypeAdapter[Shape] = TypeAdapter(Shape)
    for stage, members in shapes.stages.items():
        for given, shape in zip(raw["stages"][stage], members, strict=True):
            written = shape.written()
            assert set(written) == set(given), (stage, given)
            assert list(written)[:1] == ["op"]
            assert adapter.validate_python(written, strict=False) == shape
