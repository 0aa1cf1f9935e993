"""The Wan 2.1 14B shapes scaled to several resolutions and frame counts
(fixtures/shapes/wan14b_scaled_1000.yaml.xz, written by fixtures/shapes/scale_recorded.py from
the 480x832, 9-frame recording): about 1,000 distinct shapes that load; the recorded setting
exactly as recorded; bigger settings' FLOPs grown by the token and pixel ratios; every device
op's tensors laid out as recorded (zero strides, stride order, contiguity, within the tensor
they were cut from), the small ones built and run on the CPU; the script writes the committed
file again, byte for byte."""

from __future__ import annotations

import importlib.util
import itertools
import lzma
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers import import_or_skip
from ruamel.yaml import YAML

from ncu_classify.shapes.aten import ITEMSIZE, AtenShape, TensorSpec
from ncu_classify.shapes.file import ShapeEntry, ShapesFile, load_shapes
from ncu_classify.shapes.ops import OpShape

ROOT = Path(__file__).resolve().parents[2]
SCALED = ROOT / "fixtures" / "shapes" / "wan14b_scaled_1000.yaml.xz"
RECORDED = ROOT / "reports" / "record" / "wan_14b_480x832_h200_shapes.yaml.xz"
SCRIPT = ROOT / "fixtures" / "shapes" / "scale_recorded.py"
MEASURED = {"real_us", "real_kernels", "real_calls", "inputs_file"}  # dropped when scaled
TAGS = ["480x832x9", "480x832x17", "544x960x9", "624x1088x9", "704x1280x9", "704x1280x17"]


def _load(xz: Path, folder: Path) -> ShapesFile:
    plain = folder / xz.name.removesuffix(".xz")
    plain.write_bytes(lzma.decompress(xz.read_bytes()))
    return load_shapes(plain)


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> ShapesFile:
    return _load(SCALED, tmp_path_factory.mktemp("scaled"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> ShapesFile:
    return _load(RECORDED, tmp_path_factory.mktemp("recorded"))


def _step(shapes: ShapesFile, stage: str) -> list[ShapeEntry]:
    return [e for e in shapes.entries() if e.stage == stage]


def _dump(entry: ShapeEntry) -> dict[str, Any]:
    return entry.shape.model_dump(exclude=MEASURED | {"name"})


def test_about_a_thousand_distinct_ids_in_stages_per_setting(scaled: ShapesFile) -> None:
    ids = [e.group for e in scaled.entries()]
    assert len(ids) == len(set(ids))
    assert 900 <= len(ids) <= 1200
    stages = {e.stage for e in scaled.entries()}
    assert stages == {f"{base}_{tag}" for base in ("dit", "vae", "output") for tag in TAGS}
    assert not any(set(e.shape.model_fields_set) & MEASURED for e in scaled.entries())


def test_recorded_setting_reproduces_the_recording(
    scaled: ShapesFile, recorded: ShapesFile
) -> None:
    mine = {e.group: e for e in scaled.entries() if e.stage.endswith("_480x832x9")}
    assert len(mine) == len(recorded.entries()) == 254  # nothing left out
    for entry in recorded.entries():
        same = mine[entry.group.replace(":", "_480x832x9:", 1)]
        assert _dump(same) == _dump(entry), entry.group


Pair = tuple[list[ShapeEntry], list[ShapeEntry]]


def _find(shapes: list[ShapeEntry], op: str, source: str, pick: Callable[[Any], bool]) -> OpShape:
    """The one shape of `op` whose source starts with `source` and that `pick` takes."""
    found = [
        e.shape
        for e in shapes
        if e.shape.op == op and (e.shape.source or "").startswith(source) and pick(e.shape)
    ]
    assert len(found) == 1, (op, source, len(found))
    return found[0]


def _grown(
    stages: Pair, op: str, source: str, pick: Callable[[Any], bool] = lambda _: True
) -> tuple[int, Fraction]:
    """The FLOPs of one shape in the second stage, and their ratio to the first stage's."""
    old = _find(stages[0], op, source, pick).nominal_flops()
    new = _find(stages[1], op, source, pick).nominal_flops()
    return new, Fraction(new, old)


def test_flops_grow_by_the_token_and_pixel_ratios(scaled: ShapesFile) -> None:
    dit = (_step(scaled, "dit_480x832x9"), _step(scaled, "dit_704x1280x17"))
    tokens = Fraction(5 * 44 * 80, 3 * 30 * 52)  # L = F' x H/16 x W/16: 17600 / 4680
    flops, ratio = _grown(dit, "linear", "transformer.blocks.*.attn1.to_q")
    assert (flops, ratio) == (2 * 17600 * 5120 * 5120, tokens)
    flops, ratio = _grown(dit, "linear", "transformer.blocks.*.ffn.net.*.proj")
    assert (flops, ratio) == (2 * 17600 * 13824 * 5120, tokens)
    flops, ratio = _grown(dit, "attention", "transformer.blocks.*.attn1")
    assert (flops, ratio) == (4 * 40 * 17600 * 17600 * 128, tokens**2)
    flops, ratio = _grown(dit, "attention", "transformer.blocks.*.attn2")
    assert (flops, ratio) == (4 * 40 * 17600 * 512 * 128, tokens)
    flops, ratio = _grown(dit, "conv3d", "transformer.patch_embedding")
    assert (flops, ratio) == (2 * 5120 * 17600 * 16 * 4, tokens)
    # the timestep does not depend on the video: written once, at 480x832x9
    assert not [e for e in dit[1] if e.shape.source == "transformer.condition_embedder.time_proj"]

    vae = (_step(scaled, "vae_480x832x9"), _step(scaled, "vae_704x1280x9"))
    pixels = Fraction(704 * 1280, 480 * 832)
    one_frame = lambda shape: shape.input[2] == 3  # noqa: E731  (1 + 2 cached, per chunk)
    flops, ratio = _grown(vae, "conv3d", "vae.decoder.conv_out", one_frame)
    assert (flops, ratio) == (2 * 3 * 704 * 1280 * 96 * 27, pixels)
    last_upsample = lambda shape: shape.input[0] == 4 and shape.weight[0] == 96  # noqa: E731
    flops, ratio = _grown(vae, "conv2d", "vae.decoder.up_blocks.*.upsamplers", last_upsample)
    assert (flops, ratio) == (2 * 4 * 96 * 704 * 1280 * 192 * 9, pixels)
    flops, ratio = _grown(vae, "attention", "vae.decoder.mid_block.attentions.*")
    assert (flops, ratio) == (4 * 88 * 160 * 88 * 160 * 384, pixels**2)
    whole_latent = (vae[0], _step(scaled, "vae_704x1280x17"))  # F' = 5 latent frames, not 3
    flops, ratio = _grown(whole_latent, "conv3d", "vae.post_quant_conv")
    assert (flops, ratio) == (2 * 16 * 5 * 88 * 160 * 16, pixels * Fraction(5, 3))


def _signature(shape: AtenShape) -> tuple[Any, ...]:
    """What a device op keeps however it is scaled: overload, provenance, name suffix, and per
    tensor dtype, rank and broadcast axes."""
    suffix = (shape.name or "").removeprefix(shape.readable())
    tensors = [*shape.tensors(), *shape.outputs]
    layout = [(t.dtype, len(t.shape), [s == 0 for s in t.strides]) for t in tensors]
    return shape.overload, shape.source, shape.calls, suffix, layout


def _origins(script: ModuleType) -> dict[str, AtenShape]:
    """The recorded device op each scaled one was made from, by the scaled group id (the name
    the script gives it)."""
    document = YAML(typ="safe", pure=True).load(lzma.decompress(RECORDED.read_bytes()).decode())
    origins: dict[str, AtenShape] = {}
    for tag in TAGS:
        new = script.Setting(*map(int, tag.split("x")))
        scaler = script.Scaler(script.Setting(480, 832, 9), new)
        for stage, shapes in document["stages"].items():
            for raw in (s for s in shapes if s["op"] == "aten"):
                name = scaler.shape(raw, stage)["name"]
                kept = {k: v for k, v in raw.items() if k not in MEASURED}
                origins[f"{stage}_{tag}:{name}"] = AtenShape.model_validate(kept)
    return origins


def _pairs(scaled: ShapesFile, script: ModuleType) -> Iterator[tuple[TensorSpec, TensorSpec]]:
    """Every tensor of every scaled device op with its recorded counterpart."""
    origins = _origins(script)
    for entry in scaled.entries():
        if isinstance(entry.shape, AtenShape):
            old = origins[entry.group]
            assert _signature(old) == _signature(entry.shape)
            new = [*entry.shape.tensors(), *entry.shape.outputs]
            yield from zip([*old.tensors(), *old.outputs], new, strict=True)


def _order(t: TensorSpec) -> list[int]:
    """The axes longer than 1 with a stride, outermost first."""
    axes = [i for i, n in enumerate(t.shape) if n > 1 and t.strides[i]]
    return sorted(axes, key=lambda i: -t.strides[i])


def _cut_from(t: TensorSpec) -> int:
    """The elements of the tensor a view was cut from: its outermost dimension's reach."""
    return max((n * s for n, s in zip(t.shape, t.strides, strict=True)), default=1)


def _nested(t: TensorSpec) -> bool:
    """No two elements of the view share storage."""
    axes = _order(t)[::-1]
    return all(t.strides[o] >= t.strides[i] * t.shape[i] for i, o in itertools.pairwise(axes))


def test_device_op_tensors_keep_their_layout(scaled: ShapesFile, script: ModuleType) -> None:
    checked = 0
    for old, new in _pairs(scaled, script):
        assert [s == 0 for s in new.strides] == [s == 0 for s in old.strides]
        assert [n > 1 for n in new.shape] == [n > 1 for n in old.shape]
        assert _order(new) == _order(old), (old, new)
        assert new.is_dense() == old.is_dense() and new.is_broadcast() == old.is_broadcast()
        assert _nested(new) == _nested(old)
        assert old.span() <= _cut_from(old)  # a view stays inside what it was cut from
        assert new.offset < new.span() <= _cut_from(new), (old, new)
        if old.offset == 0:
            assert new.offset == 0
        checked += 1
    assert checked > 2000  # every tensor of ~800 device ops


def _bytes(t: TensorSpec) -> int:
    return t.span() * ITEMSIZE[t.dtype]


@pytest.mark.needs("torch")
def test_small_device_ops_of_the_smallest_settings_run_on_the_cpu(scaled: ShapesFile) -> None:
    from ncu_classify.replay.aten import Storages, finite, prepare

    small = [
        e.shape
        for e in scaled.entries()
        if e.stage.endswith(("_480x832x17", "_544x960x9"))
        and isinstance(e.shape, AtenShape)
        and all(_bytes(t) <= 4 << 20 for t in [*e.shape.tensors(), *e.shape.outputs])
    ]
    assert len(small) >= 25  # the latent's views, the cache, the norms' small terms, rope
    storages = Storages(budget=256 << 20)
    for shape in small:
        result = prepare(shape, 0, "cpu", storages).run()
        first = result[0] if isinstance(result, tuple) else result
        assert list(first.shape) == shape.outputs[0].shape, shape.name
        assert finite(result), shape.name


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """fixtures/shapes/scale_recorded.py as a module (it needs torch)."""
    import_or_skip("torch")
    spec = importlib.util.spec_from_file_location("scale_recorded", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_script_writes_the_committed_file_again(script: ModuleType) -> None:
    assert script.generate(RECORDED) == lzma.decompress(SCALED.read_bytes()).decode()


def test_a_size_the_script_cannot_place_is_left_out(script: ModuleType) -> None:
    scaler = script.Scaler(script.Setting(480, 832, 9), script.Setting(704, 1280, 17))
    view = {"shape": [1, 60, 104], "dtype": "float32", "strides": [6240, 1, 60], "offset": 0}
    assert scaler.tensor(view, "vae", "aten.clone.default")["strides"] == [14080, 1, 88]
    from_row_1 = {**view, "strides": [6240, 104, 1], "offset": 104}  # is row 1 H-dependent?
    with pytest.raises(script.Unmappable):
        scaler.tensor(from_row_1, "vae", "aten.clone.default")
    with pytest.raises(script.Unmappable):  # a bare 60 may be H/8
        scaler.argument([60, 2], "vae", "aten.add.Tensor", [])


def test_a_typed_shapes_layout_and_mask_scale_with_it(script: ModuleType) -> None:
    """A VAE conv_shortcut fed a frames-first view stays frames-first at 704x1280 (its strides
    rebuilt from the scaled dims, the weight's layout kept); a DiT padding mask follows the
    tokens."""
    scaler = script.Scaler(script.Setting(480, 832, 9), script.Setting(704, 1280, 9))
    source = "vae.decoder.up_blocks.*.resnets.*.conv_shortcut"
    conv = {"op": "conv3d", "input": [1, 192, 1, 120, 208], "weight": [384, 192, 1, 1, 1],
            "dtype": "fp32", "bias": True, "source": source,
            "layout": {"input": {"strides": [4792320, 24960, 4792320, 208, 1], "offset": 0},
                       "weight": {"strides": [1, 384, 1, 1, 1], "offset": 0}}}  # fmt: skip
    new = scaler.shape(conv, "vae")
    assert new["input"] == [1, 192, 1, 176, 320]
    assert new["layout"] == {
        "input": {"strides": [192 * 176 * 320, 176 * 320, 192 * 176 * 320, 320, 1], "offset": 0},
        "weight": conv["layout"]["weight"],
    }
    mask = {"shape": [1, 1, 1, 4680], "dtype": "bool", "strides": [4680, 4680, 4680, 1]}
    attention = {"op": "attention", "backend": "sdpa", "heads": 40, "head_dim": 128,
                 "q_len": 4680, "valid_keys": 4680, "mask": {**mask, "offset": 0}}  # fmt: skip
    new = scaler.shape(attention, "dit")
    assert (new["valid_keys"], new["mask"]["shape"], new["mask"]["strides"]) == (
        10560, [1, 1, 1, 10560], [10560, 10560, 10560, 1],
    )  # fmt: skip
