"""A program-wide move: every shape of the Wan 14B decode changed to bf16 and channels-last
together (the plan the H200 ran, byte for byte), its capture's result computed here equal to
the H200's, and the changes themselves on real shapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.shapes.aten import AtenShape
from ncu_classify.shapes.file import ShapesFile, load_shapes
from ncu_classify.shapes.ops import CastShape, Conv3dShape
from ncu_classify.tries.plan import plan_program_move
from ncu_classify.tries.plan_models import TryPlan
from ncu_classify.tries.program import changed_shape
from ncu_classify.tries.results import TryResults

PROGRAM = ROOT / "fixtures" / "tries_h200" / "program_vae"


@pytest.fixture(scope="module")
def recorded(wan_shapes: Path) -> ShapesFile:
    """The Wan 14B recording's shapes file (DiT step bf16, VAE decode fp32 NCDHW)."""
    return load_shapes(wan_shapes)


def test_the_plan_is_the_one_the_h200_ran(recorded: ShapesFile) -> None:
    labels = ("/tmp/wan14b_cards.json", "/tmp/wan14b_shapes.yaml")
    plan, text = plan_program_move(recorded, labels, ["vae"], "bf16_channels_last")
    assert plan == TryPlan.model_validate_json((PROGRAM / "plan.json").read_text())
    assert text == (PROGRAM / "shapes.yaml").read_text()
    assert plan.program is not None and len(plan.program.pairs) == 183


def test_each_shape_changes_as_the_program_would(recorded: ShapesFile) -> None:
    """A conv goes bf16 NDHWC; a device op's float32 tensors go bfloat16 with the strides
    torch gives a channels-last tensor; a cast to bf16 of what is bf16 now goes away."""
    vae = {e.group: e.shape for e in recorded.entries() if e.stage == "vae"}
    conv = vae["vae:conv3d:in1x96x6x482x834_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"]
    changed = changed_shape(conv, "bf16_channels_last")
    assert isinstance(changed, Conv3dShape)
    assert (changed.dtype, changed.allow_tf32, changed.memory_format) == (
        "bf16", False, "channels_last_3d",
    )  # fmt: skip
    pads = [s for s in vae.values() if isinstance(s, AtenShape) and "constant_pad" in s.overload]
    pad = next(s for s in pads if s.tensors()[0].is_dense())
    view = next(s for s in pads if not s.tensors()[0].is_dense())  # a slice keeps its strides
    strided = changed_shape(view, "channels_last")
    assert isinstance(strided, AtenShape)
    assert strided.tensors()[0].strides == view.tensors()[0].strides
    moved = changed_shape(pad, "bf16_channels_last")
    assert isinstance(moved, AtenShape)
    before, after = pad.tensors()[0], moved.tensors()[0]
    assert (before.dtype, after.dtype) == ("float32", "bfloat16")
    _, c, d, h, w = before.shape
    assert after.strides == [c * d * h * w, 1, h * w * c, w * c, c]  # NDHWC
    assert changed_shape(pad, "channels_last") is not pad  # strides alone change it
    cast = CastShape.model_validate({"op": "cast", "shape": [4], "from": "fp32", "to": "bf16"})
    assert changed_shape(cast, "bf16") is None and changed_shape(cast, "channels_last") is cast


def test_the_result_computed_here_is_the_hosts(rules) -> None:  # type: ignore[no-untyped-def]
    """174 shapes measured both ways, 296.28 ms -> 153.22 ms per inference; 9 concatenations
    launched no kernel once changed and are named, left out of both sums."""
    from ncu_classify.tries.program_results import program_result
    from ncu_classify.verdicts.classify import classify

    plan = TryPlan.model_validate_json((PROGRAM / "plan.json").read_text())
    cards = classify([PROGRAM / "raw"], rules, jobs=1)
    assert plan.program is not None
    result = program_result(plan.program, {c.group: c for c in cards.cards})
    host = TryResults.model_validate_json((PROGRAM / "tries.json").read_text())
    assert result == host.program
    stage = result.stages[0]
    assert (stage.shapes, stage.as_recorded_us, stage.changed_us) == (174, 296277.285, 153223.627)
    assert stage.saving_us == round(stage.as_recorded_us - stage.changed_us, 3) == 143053.658
    assert stage.saving_ci95_us == (141627.042, 144480.274)
    assert len(stage.failed) == 9 and all("aten.cat.default" in g for g in stage.failed)
