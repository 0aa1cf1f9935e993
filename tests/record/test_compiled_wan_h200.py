"""The compiled Wan 2.1 decode on the H200 (issue 40; reports/record/device_compiled_wan.sh,
2026-12-05): `record_wan.py --compile vae.decoder`, 480x832, 9 frames, one warm-up inference
left out with `record --start-at transformer:2`, recorded, captured largest first to
`--coverage 99.5` (over two device commands: `--resume`) and classified. The recording's time
per stage is the plain compiled program's per inference (torch.profiler, no recorder, after the
same warm-up); the cards cover >= 99.5 % of each stage with Inductor's kernels, each judged;
where a replayed graph ran other kernels than the program's, the fidelity note names them.
The committed reports are without their source blocks (`capture --drop-sources`'s rewrite)."""

from __future__ import annotations

import json
import lzma

import pytest
from helpers import ROOT, unpacked_capture

from ncu_classify.cards.fidelity import slow_or_fast
from ncu_classify.shapes.chain_shape import CompiledShape
from ncu_classify.shapes.file import ShapesFile, load_shapes

HERE = ROOT / "fixtures" / "compiled_wan_h200"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> ShapesFile:
    """The recording (`--start-at transformer:2`), read back."""
    path = tmp_path_factory.mktemp("wan") / "shapes.yaml"
    path.write_bytes(lzma.decompress((HERE / "shapes.yaml.xz").read_bytes()))
    return load_shapes(path)


@pytest.fixture(scope="module")
def cards(tmp_path_factory: pytest.TempPathFactory, rules):  # type: ignore[no-untyped-def]
    """The capture classified here (its manifest committed compressed)."""
    from ncu_classify.verdicts.classify import classify

    capture = unpacked_capture(HERE / "cap", tmp_path_factory.mktemp("wancap"))
    return classify([capture], rules, jobs=1)


def test_the_recording_is_one_inference_of_the_plain_compiled_program(
    recorded: ShapesFile,
) -> None:
    """Per stage, the recorded kernel time is the plain program's for one inference: the DiT
    7,449.259 us against 7,425.0 us (+0.33 %), the decode 323,649.39 us against 323,894.2 us
    (-0.08 %); without `--start-at` it had counted the warm-up too (14.90 ms, 575.8 ms)."""
    assert recorded.recorded is not None and recorded.recorded.totals is not None
    stages = recorded.recorded.totals.stages
    text = (HERE / "profile.json").read_text()
    plain = json.loads(text[text.index("{") : text.rindex("}") + 1])["kernel_us_by_section"]
    assert (stages["dit"].kernel_us, plain["dit"]) == (7449.259, 7425.0)
    assert (stages["vae"].kernel_us, plain["vae_decode"]) == (323649.39, 323894.2)
    assert abs((stages["vae"].kernel_us or 0) / plain["vae_decode"] - 1) < 0.001
    assert abs((stages["dit"].kernel_us or 0) / plain["dit"] - 1) < 0.005


def test_the_recording_lists_the_graphs_recompiles_and_breaks(recorded: ShapesFile) -> None:
    """The decoder as dynamo ran it: 21 graphs (the warm-up's compiles kept), 16 recompiles, 5
    graph breaks at one site of diffusers' Wan VAE, every graph a `compiled` shape."""
    assert recorded.recorded is not None and recorded.recorded.compiled is not None
    compiled = recorded.recorded.compiled
    assert (compiled.regions, compiled.graphs, compiled.recompiles) == (
        ["vae:vae.decoder"],
        21,
        16,
    )
    assert sum(compiled.graph_breaks.values()) == 5
    assert [site.rsplit("/", 1)[-1] for site in compiled.graph_break_sites] == [
        "autoencoder_kl_wan.py:290"
    ]
    graphs = [s for s in recorded.stages["vae"] if isinstance(s, CompiledShape)]
    assert len(graphs) == 21


def test_the_cards_cover_each_stage_with_inductor_s_kernels_judged(cards) -> None:  # type: ignore[no-untyped-def]
    """99.53 % of the decode's 323.6 ms, 99.54 % of the DiT's and all of the output stage are
    cards; the 15 graphs captured hold 363 kernels, 162 of them Inductor's Triton kernels, and
    every kernel has a verdict."""
    coverage = {c.stage: (c.coverage_pct, c.real_us) for c in cards.coverage}
    assert coverage["vae"] == (99.53, 323649.39)
    assert coverage["dit"] == (99.54, 7449.259)
    assert coverage["output"] == (100.0, 175.136)
    graphs = [c for c in cards.cards if c.op == "compiled"]
    kernels = [k for c in graphs for k in c.kernels]
    assert (len(graphs), len(kernels)) == (15, 363)
    assert sum(1 for k in kernels if k.kernel.startswith("triton_")) == 162
    assert all(k.classification for c in cards.cards for k in c.kernels)
    assert all(c.status in ("classified", "unresolved") for c in cards.cards)


def test_a_graph_replayed_with_other_kernels_says_which(cards) -> None:  # type: ignore[no-untyped-def]
    """g26 ran 7,910.3 us in the program and 3,044.5 us replayed: the program's Inductor fused
    the convolution's output into its cat + pad kernel, the replay's did not, and the fidelity
    note says so by name (25 cards replay more than 10 % away)."""
    flagged = {f.group: f for f in slow_or_fast(cards.cards)}
    assert len(flagged) == 25
    g26 = flagged["vae:compiled:vae.decoder:g26:compiled"]
    assert (g26.real_us, g26.replayed_us) == (7910.323, 3044.512)
    assert g26.note == (
        "the program ran `triton_poi_fused_cat_constant_pad_nd_convolution_0` (1 per call), the"
        " replay did not; the replay ran `triton_poi_fused_cat_constant_pad_nd_0` (1 per call),"
        " the program did not"
    )
