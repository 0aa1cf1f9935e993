"""A video DiT and VAE the project did not write, recorded as a user would run them: the tiny
HunyuanVideo program of `reports/record/unseen_cpu/hunyuan.py` (diffusers, random weights, CPU),
whose attention takes three masks: the token refiner's boolean mask, the dual-stream joint
attention's boolean text padding mask (9 of 16 text tokens), and the VAE mid-block's additive
frame-causal float mask. Each is kept on its attention shape, with the program's strides."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from helpers import ROOT, import_or_skip

torch = import_or_skip("torch")
import_or_skip("diffusers")

from ncu_classify.record.document import shapes_yaml, validated_document  # noqa: E402
from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.shapes.attention import AttentionShape  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402

HUNYUAN = ROOT / "reports" / "record" / "unseen_cpu" / "hunyuan.py"


@pytest.fixture(scope="module")
def attentions(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, AttentionShape]]:
    """The recorded attention shapes of the program, by stage."""
    recorder = Recorder()
    with recorder, torch.no_grad():
        runpy.run_path(str(HUNYUAN), run_name="__main__")
    path: Path = tmp_path_factory.mktemp("hunyuan") / "shapes.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    shapes = load_shapes(path)
    return [
        (stage, s)
        for stage, ss in shapes.stages.items()
        for s in ss
        if isinstance(s, AttentionShape)
    ]


def test_every_mask_is_kept_with_its_layout(attentions: list[tuple[str, AttentionShape]]) -> None:
    masks = [
        (stage, s.q_len, s.calls, s.mask.shape, s.mask.dtype, s.mask.strides)
        for stage, s in attentions
        if s.mask is not None
    ]
    assert masks == [
        ("transformer", 16, 1, [1, 2, 16, 16], "bool", [512, 256, 16, 1]),  # token refiner
        ("transformer", 64, 4, [1, 1, 1, 64], "bool", [64, 64, 64, 1]),  # joint, padded text
        ("vae", 192, 1, [1, 1, 192, 192], "fp32", [36864, 36864, 192, 1]),  # frame-causal
    ]
    assert len(attentions) == 3  # no attention of the program went unmasked


def test_the_transposed_heads_keep_their_strides(
    attentions: list[tuple[str, AttentionShape]],
) -> None:
    """The DiT's q/k/v are (batch, tokens, heads, dim) views transposed to (batch, heads,
    tokens, dim): recorded as the views they were, so the replay runs SDPA on them as the
    program did; the VAE's are plain."""
    layouts = {(stage, s.q_len): sorted(s.layout or {}) for stage, s in attentions}
    assert layouts == {
        ("transformer", 16): ["key", "query", "value"],
        ("transformer", 64): ["key", "query", "value"],
        ("vae", 192): [],
    }
    joint = next(s for stage, s in attentions if s.q_len == 64)
    assert joint.layout is not None
    assert joint.key().startswith("sdpa:self_b1_h2_d16_q64_k64:fp32:strided:mask-bool:h")
