"""A compiled region on the H200 (issue 40; reports/record/device_compiled.sh): the causal-VAE
block of fixtures/models/record_block.py (bf16, channels_last_3d, 1x128x8x240x360) under
`torch.compile`, recorded as it ran (compiled), captured and classified: the card holds
Inductor's Triton kernels beside cuDNN's convs, each with its verdict, and the replay's time
per call is the plain compiled program's (torch.profiler, no recorder) within 1.5 %."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.shapes.chain_shape import CompiledShape
from ncu_classify.shapes.file import load_shapes

HERE = ROOT / "fixtures" / "compiled_h200"


@pytest.fixture(scope="module")
def card(rules):  # type: ignore[no-untyped-def]
    """The compiled region's card, classified here from the committed capture."""
    from ncu_classify.verdicts.classify import classify

    cards = classify([HERE / "cap"], rules, jobs=1)
    (found,) = [c for c in cards.cards if c.op == "compiled"]
    return found


def test_the_recording_holds_the_region_as_it_ran() -> None:
    """One region, one graph of 3 calls, its ATen ops (two group norms, SiLUs, two convs, the
    add) and the kernels the program launched for it, Inductor's among them."""
    shapes = load_shapes(HERE / "shapes.yaml")
    (region,) = [s for s in shapes.stages["block"] if isinstance(s, CompiledShape)]
    assert (region.region, region.graph, region.calls, region.backend) == (
        "block",
        0,
        3,
        "inductor",
    )
    ops = Counter(op.overload for op in region.chain.ops)
    assert ops["aten.convolution.default"] == 2 and ops["aten.native_group_norm.default"] == 2
    assert sum(1 for k in region.kernels if k.startswith("triton_")) == 8
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert shapes.recorded.compiled.graph_breaks == {}


def test_the_card_holds_inductor_s_kernels_with_verdicts(card) -> None:  # type: ignore[no-untyped-def]
    """13 kernels a call: 8 Triton kernels (fused group norm, SiLU, the residual add) named as
    the program launched them, and cuDNN's two implicit-GEMM convs; every one classified."""
    names = [k.kernel for k in card.kernels]
    assert len(names) == 13
    recorded = load_shapes(HERE / "shapes.yaml").stages["block"][0]
    assert isinstance(recorded, CompiledShape)
    triton = {n for n in names if n.startswith("triton_")}
    assert triton == {k for k in recorded.kernels if k.startswith("triton_")}
    assert sum(1 for n in names if "xmma_fprop_implicit_gemm" in n) == 2
    assert all(k.classification for k in card.kernels)
    assert card.primary == "compute_bound"


def test_the_replay_takes_the_plain_compiled_program_s_time(card) -> None:  # type: ignore[no-untyped-def]
    """3,446.75 us per call replayed under ncu against 10,248.2 us for 3 calls of the plain
    compiled program after a warm-up call (3,416.07 us): 0.9 % apart."""
    replayed = sum(k.metrics["dur_us"] for k in card.kernels)
    assert round(replayed, 2) == 3446.75
    text = (HERE / "profile.json").read_text()  # the program's own line, then the figures
    plain = json.loads(text[text.index("{") : text.rindex("}") + 1])
    per_call = plain["kernel_us_by_section"]["inference"] / 3
    assert round(per_call, 2) == 3416.07 and abs(replayed / per_call - 1) < 0.015


def test_capture_plans_and_keeps_a_compiled_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`capture` of the recording on the CPU with the stand-in ncu serving the H200's reports:
    the compiled shape is one batch member like any other, its manifest line says op
    `compiled` and its parameters (the region, its chain), and it classifies to the H200's card."""
    import os

    from ncu_classify.cli.entry import run

    monkeypatch.setenv("PATH", f"{ROOT / 'tests' / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(HERE / "cap"))
    raw = tmp_path / "raw"
    assert run(["capture", "--shapes", str(HERE / "shapes.yaml"), "-o", str(raw)]) == 0
    manifest = json.loads((raw / "manifest.json").read_text())
    (line,) = [s for s in manifest["shapes"] if s["op"] == "compiled"]
    assert (line["group"], line["status"], line["kernels"]) == (
        "block:compiled:block:g0:compiled",
        "ok",
        13,
    )
    assert line["shape_parameters"]["region"] == "block"
    assert len(line["shape_parameters"]["chain"]["ops"]) >= 6
