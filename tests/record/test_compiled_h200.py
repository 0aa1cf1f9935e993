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
    assert not [k for k in region.kernels if "FillFunctor" in k]  # tuning's L2 flushes: setup
    assert shapes.recorded is not None and shapes.recorded.compiled is not None
    assert shapes.recorded.compiled.graph_breaks == {}


def test_the_recorded_time_is_the_plain_compiled_program_s() -> None:
    """Record's kernel time per call of the graph (its first call, Inductor's tuning among it,
    counted as model building: 171,842.077 us) is 3,465.97 us and 13 kernels; the plain
    compiled program under torch.profiler, after a warm-up call, took 10,395.1 us for 3 calls
    (3,465.03 us, 39 kernels): 0.03 % apart."""
    shapes = load_shapes(HERE / "shapes.yaml")
    (region,) = [s for s in shapes.stages["block"] if isinstance(s, CompiledShape)]
    assert (region.real_us, region.real_kernels, region.real_calls) == (3465.9713, 13.0, 3)
    assert shapes.recorded is not None and shapes.recorded.totals is not None
    assert shapes.recorded.totals.setup_kernel_us == 171842.077
    plain = _profile()
    assert (plain["kernel_us_by_section"]["inference"], plain["kernels"]) == (10395.1, 39)
    per_call = plain["kernel_us_by_section"]["inference"] / 3
    assert abs((region.real_us or 0) / per_call - 1) < 0.001


def _profile() -> dict:  # type: ignore[type-arg]
    """reports/record/profile_program.py's figures (after the program's own line)."""
    text = (HERE / "profile.json").read_text()
    return json.loads(text[text.index("{") : text.rindex("}") + 1])  # type: ignore[no-any-return]


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
    """3,491.94 us per call replayed under ncu against 10,395.1 us for 3 calls of the plain
    compiled program after a warm-up call (3,465.03 us): 0.8 % apart."""
    replayed = sum(k.metrics["dur_us"] for k in card.kernels)
    assert round(replayed, 2) == 3491.94
    per_call = _profile()["kernel_us_by_section"]["inference"] / 3
    assert round(per_call, 2) == 3465.03 and abs(replayed / per_call - 1) < 0.015


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


def test_the_compiled_wan_decode_as_it_ran() -> None:
    """The Wan 2.1 decode (480x832, 9 frames, fp32) with its decoder compiled, one warm-up
    inference first, recorded on the H200 (torch 2.11): 27 graphs, 20 recompiles and 5 graph
    breaks (dynamo's `tensor == "Rep"` and its recompile limit); every graph is a shape (7
    read a float dynamo lifted to a tensor, traced with its value); Inductor's tuning, 12.2 s
    of kernels on a cold cache, is model building, not the decode's 578.0 ms; what the decoder
    ran eagerly between its graphs (237.6 ms, 41 %) is the one thing not covered."""
    import lzma

    from ruamel.yaml import YAML

    from ncu_classify.shapes.file import ShapesFile

    text = lzma.decompress((HERE / "wan_decode_shapes.yaml.xz").read_bytes()).decode()
    shapes = ShapesFile.model_validate(YAML(typ="safe").load(text), strict=False)
    recorded = shapes.recorded
    assert recorded is not None and recorded.totals is not None and recorded.compiled
    assert (recorded.compiled.graphs, recorded.compiled.recompiles) == (27, 20)
    assert sum(recorded.compiled.graph_breaks.values()) == 5
    regions = [s for s in shapes.stages["vae"] if isinstance(s, CompiledShape)]
    assert len({(r.graph, r.compile_id) for r in regions}) >= 27 and all(
        r.chain.ops for r in regions
    )
    assert recorded.totals.setup_kernel_us == 12214259.25
    assert recorded.totals.stages["vae"].kernel_us == 577951.392
    (eager,) = [u for u in recorded.totals.uncovered if u.stage == "vae"]
    assert eager.name == "(code run eagerly between the graphs of compiled region vae.decoder)"
    assert eager.kernel_us == 237641.699


def test_the_compiled_wan_decode_s_eager_code_is_shapes_op_by_op() -> None:
    """The same program recorded again on the H200 (2026-12-05) since a region's eager code is
    read op by op from torch.profiler: the 237.6 ms the decoder ran eagerly between its graphs
    (41 % of the stage, uncovered before) are now 102 shapes of stage vae (91 `aten`, 8 conv3d,
    3 conv2d; 236,801.052 us), the stage is covered whole, and the only uncovered line is 19
    kernels (2.4 ms, 0.4 % of the program) launched outside every call. Its totals count the
    program's two inferences (the warm-up and the measured one: the DiT's 14,897.6 us is
    twice the plain program's 7,445.6 us per inference), less the graphs' first calls, which
    are model building (12.36 s with Inductor's tuning)."""
    import lzma

    from ruamel.yaml import YAML

    from ncu_classify.shapes.file import ShapesFile

    text = (HERE / "wan_decode_eager_ops_shapes.yaml.xz").read_bytes()
    data = YAML(typ="safe").load(lzma.decompress(text).decode())
    shapes = ShapesFile.model_validate(data, strict=False)
    recorded = shapes.recorded
    assert recorded is not None and recorded.totals is not None and recorded.compiled
    assert (recorded.compiled.graphs, recorded.compiled.recompiles) == (27, 20)
    vae = shapes.stages["vae"]
    eager = [s for s in vae if not isinstance(s, CompiledShape) and s.source == "vae.decoder"]
    assert Counter(s.op for s in eager) == {"aten": 91, "conv3d": 8, "conv2d": 3}
    eager_us = sum((s.real_us or 0) * (s.real_calls or 0) for s in eager)
    assert round(eager_us, 3) == 236801.052
    assert sum(1 for s in vae if isinstance(s, CompiledShape)) == 27
    totals = recorded.totals
    assert [(u.stage, u.name, u.kernels) for u in totals.uncovered] == [
        ("(none)", "(kernels outside any recorded call)", 19)
    ]
    assert (totals.stages["vae"].kernel_us, totals.setup_kernel_us) == (575843.591, 12358470.277)
    text = (HERE / "wan_decode_profile.json").read_text()  # (after the program's own lines)
    plain = json.loads(text[text.index("{") : text.rindex("}") + 1])
    dit = plain["kernel_us_by_section"]["dit"]
    assert dit == 7445.6 and abs(totals.stages["dit"].kernel_us / dit - 2) < 0.001


@pytest.mark.needs("torch")
def test_eager_code_between_graphs_names_its_kernels() -> None:
    """The uncovered line of a region's eager code says what it ran, by the kernels' base
    names, most launched first: here the names the block's graph launched on the H200 (cuDNN's
    conv by its cut name, Inductor's Triton kernels), two of each, the conv four times."""
    from ncu_classify.record.timing import KernelTime
    from ncu_classify.record.totals import its_kernels

    shapes = load_shapes(HERE / "shapes.yaml")
    (region,) = [s for s in shapes.stages["block"] if isinstance(s, CompiledShape)]
    time = KernelTime(kernels=20, ns=1, names={n: 2 for n in region.kernels})
    conv = next(n for n in region.kernels if n.startswith("sm90_xmma"))
    time.names[conv] = 4
    told = its_kernels(time)
    assert told.startswith(f"; its kernels: {conv} x4, triton_per_fused_clone_")
    assert told.endswith(" and 5 more") and told.count(" x2") == 3
    assert its_kernels(KernelTime()) == ""
