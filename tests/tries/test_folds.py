"""Pad folds (`try --folds`, issue 39): the Wan decode's causal convs pad with F.pad and run the
conv with padding 0. Planned from the real H200 recording with its chains (which pads fold,
their exact pads, the conv's own padding, the one-sided pad left), replayed on the CPU (the
pad then the conv as recorded, the conv padding itself: the same output), and the pads that
do not fold passed over with why."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest
from helpers import ROOT, import_or_skip

from ncu_classify.cards.model import CardFile
from ncu_classify.shapes.chain_shape import ChainShape
from ncu_classify.shapes.file import ShapesFile, load_shapes
from ncu_classify.tries.plan import plan_tries, stage_shares
from ncu_classify.tries.plan_models import TryPlan

RECORDING = ROOT / "reports" / "tries" / "wan_chains_480x832_h200_shapes.yaml.xz"
NO_CARDS = CardFile.model_construct(cards=[])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> ShapesFile:
    """record_wan.py on the H200 with its chains (VAE fp32 NCDHW, 480x832, 9 frames)."""
    path = tmp_path_factory.mktemp("folds") / "wan_chains.yaml"
    path.write_bytes(lzma.decompress(RECORDING.read_bytes()))
    return load_shapes(path)


@pytest.fixture(scope="module")
def planned(
    wan: CardFile, recorded: ShapesFile, tmp_path_factory: pytest.TempPathFactory
) -> tuple[TryPlan, ShapesFile]:
    """Every fold of the decode (--folds 30) beside its top card, and the tries shapes file
    read back as capture reads it."""
    plan, text = plan_tries(wan, recorded, ("c", "s"), 1, ["vae"], folds=30)
    path = tmp_path_factory.mktemp("folds") / "tries.yaml"
    path.write_text(text)
    return plan, load_shapes(path)


def _chains(tries: ShapesFile, number: int) -> tuple[ChainShape, ChainShape]:
    """The two shapes of fold `fNN`."""
    shapes = {e.group: e.shape for e in tries.entries()}
    pair = [shapes[f"vae:f{number:02d}.{label}"] for label in ("as_recorded", "conv_padding")]
    assert all(isinstance(s, ChainShape) for s in pair)
    return pair[0], pair[1]  # type: ignore[return-value]


# (pad input, calls, its pads, the conv's own padding, the one-sided pad left, the conv weight)
FOLDS = [
    ("1x96x6x480x832", 7, "1,1,1,1,0,0", "0,1,1", None, "w96x96x3x3x3"),
    ("1x96x5x480x832", 7, "1,1,1,1,1,0", "0,1,1", "0,0,0,0,1,0", "w96x96x3x3x3"),
    ("1x192x6x240x416", 6, "1,1,1,1,0,0", "0,1,1", None, "w192x192x3x3x3"),
    ("1x192x5x240x416", 6, "1,1,1,1,1,0", "0,1,1", "0,0,0,0,1,0", "w192x192x3x3x3"),
    ("1x96x1x480x832", 7, "1,1,1,1,2,0", "0,1,1", "0,0,0,0,2,0", "w96x96x3x3x3"),
    ("1x384x4x120x208", 5, "1,1,1,1,0,0", "0,1,1", None, "w384x384x3x3x3"),
    ("1x192x1x240x416", 6, "1,1,1,1,2,0", "0,1,1", "0,0,0,0,2,0", "w192x192x3x3x3"),
    ("1x384x3x120x208", 5, "1,1,1,1,1,0", "0,1,1", "0,0,0,0,1,0", "w384x384x3x3x3"),
    ("1x384x3x60x104", 10, "1,1,1,1,0,0", "0,1,1", None, "w384x384x3x3x3"),
    ("1x384x1x120x208", 5, "1,1,1,1,2,0", "0,1,1", "0,0,0,0,2,0", "w384x384x3x3x3"),
    ("1x384x2x60x104", 10, "1,1,1,1,1,0", "0,1,1", "0,0,0,0,1,0", "w384x384x3x3x3"),
    ("1x384x1x60x104", 10, "1,1,1,1,2,0", "0,1,1", "0,0,0,0,2,0", "w384x384x3x3x3"),
    ("1x192x4x120x208", 1, "1,1,1,1,0,0", "0,1,1", None, "w384x192x3x3x3"),
    ("1x192x3x120x208", 1, "1,1,1,1,1,0", "0,1,1", "0,0,0,0,1,0", "w384x192x3x3x3"),
    ("1x192x1x120x208", 1, "1,1,1,1,2,0", "0,1,1", "0,0,0,0,2,0", "w384x192x3x3x3"),
    ("1x16x2x60x104", 1, "1,1,1,1,1,0", "0,1,1", "0,0,0,0,1,0", "w384x16x3x3x3"),
    ("1x16x3x60x104", 1, "1,1,1,1,0,0", "0,1,1", None, "w384x16x3x3x3"),
    # the time convs' cached pads of (0, 0): a copy the recording timed no kernel for, last
    ("1x384x3x60x104", 1, "0,0,0,0,0,0", "0,0,0", None, "w768x384x3x1x1"),
    ("1x384x4x120x208", 1, "0,0,0,0,0,0", "0,0,0", None, "w768x384x3x1x1"),
]  # fmt: skip


def _text(numbers: list[int]) -> str:
    return ",".join(map(str, numbers))


def test_the_wan_decode_s_causal_pads_fold_into_their_convs(
    planned: tuple[TryPlan, ShapesFile],
) -> None:
    """Every causal pad the chains tie to its conv, by the pad's time per inference (its
    card's: 869.9 us x 7 first): spatial (1, 1) folds into the conv's padding [0, 1, 1]; the
    time pad stays where it is one-sided ((1, 0), (2, 0)), none is left where it is (0, 0)."""
    plan, tries = planned
    folds = [m for m in plan.moves if m.op == "fold"]
    found = []
    for number, move in enumerate(folds, start=1):
        recorded, own = _chains(tries, number)
        assert [op.overload for op in recorded.chain.ops] == [
            "aten.constant_pad_nd.default", "aten.convolution.default"
        ]  # fmt: skip
        assert recorded.chain.ops[1].args[4] == [0, 0, 0]  # the conv as recorded: padding 0
        assert recorded.chain.inputs == own.chain.inputs  # the same draws
        assert recorded.allow_tf32 is own.allow_tf32 is True  # as the program ran the conv
        assert recorded.calls == own.calls == move.calls
        left = _text(own.chain.ops[0].args[1]) if len(own.chain.ops) == 2 else None
        weight = "w" + "x".join(map(str, recorded.chain.inputs[1].tensor.shape))
        pad = "x".join(map(str, recorded.chain.inputs[0].tensor.shape))
        pads, padding = recorded.chain.ops[0].args[1], own.chain.ops[-1].args[4]
        found.append((pad, move.calls, _text(pads), _text(padding), left, weight))
    assert found == FOLDS
    assert [m.rank for m in folds] == list(range(2, 21))  # after the top card's move
    first = folds[0]
    assert first.group == "vae:fold:aten.constant_pad_nd.default:1x96x6x480x832:fp32"
    assert first.tries[1].why == (
        "the pad copies its whole input (920.1 MB read, 926.2 MB written), 869.9 us per call"
        " as its card measured; the conv pads inside its kernel: padding [0, 1, 1], no pad"
        " left; it also feeds"
        " vae:conv3d:in1x96x6x482x834_w3x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    )  # conv_out reads the last block's pad too: the pad is tried with the conv it feeds most
    assert first.measured_us == 869.92 + 6833.696  # the pad's card and the conv's, per call


def test_pads_that_do_not_fold_are_passed_over_with_why(
    planned: tuple[TryPlan, ShapesFile],
) -> None:
    """The upsamplers' time convs pad only in time, (2, 0): nothing folds into a symmetric
    padding; the first frame's conv_in pad reads the post-quant conv directly (no chain)."""
    plan, _ = planned
    assert [(p.group, p.why) for p in plan.no_alternative] == [
        ("vae:aten.constant_pad_nd.default:1x384x1x60x104:fp32:2",
         "not folded: its pads [0, 0, 0, 0, 2, 0] are one-sided: nothing folds into a conv's"
         " symmetric padding"),
        ("vae:aten.constant_pad_nd.default:1x384x2x120x208:fp32",
         "not folded: its pads [0, 0, 0, 0, 2, 0] are one-sided: nothing folds into a conv's"
         " symmetric padding"),
        ("vae:aten.constant_pad_nd.default:1x16x1x60x104:fp32:strided",
         "not folded: no chain of the recording ties it to a conv"),
    ]  # fmt: skip


def test_folds_are_opt_in_and_held_by_no_stage_share(
    wan: CardFile, recorded: ShapesFile, planned: tuple[TryPlan, ShapesFile]
) -> None:
    """Without --folds the plan is the one before folds; with them, the stage's share held by
    the moves is the cards' (a fold's pad and conv are cards of their own)."""
    without, text = plan_tries(wan, recorded, ("c", "s"), 1, ["vae"])
    assert [m.op for m in without.moves] == ["aten.conv3d.default"] and "f01." not in text
    assert not without.no_alternative
    assert stage_shares(planned[0], wan) == stage_shares(without, wan)


@pytest.mark.needs("torch")
@pytest.mark.parametrize("number", [17, 16], ids=["no-pad-left", "one-sided-pad-left"])
def test_a_fold_replays_on_the_cpu_as_the_pad_then_the_conv(
    planned: tuple[TryPlan, ShapesFile], number: int
) -> None:
    """The conv_in folds (the smallest), each chain on the CPU from the same seeded draws: as
    recorded it is F.conv3d(F.pad(x)), to the bit; the conv padding itself computes the same
    within fp32 rounding (here: to the bit as well)."""
    torch = import_or_skip("torch")
    import torch.nn.functional as F

    from ncu_classify.replay.chain import chain_runner

    recorded, own = _chains(planned[1], number)
    baseline = chain_runner(recorded.chain, "eager", "cpu")
    folded = chain_runner(own.chain, "eager", "cpu")
    x, weight, bias = baseline.inputs
    assert all(torch.equal(a, b) for a, b in zip(baseline.inputs, folded.inputs, strict=True))
    assert baseline.input_sha256 == folded.input_sha256
    (before,), (after,) = baseline.run(), folded.run()
    pads = recorded.chain.ops[0].args[1]
    torch.testing.assert_close(before, F.conv3d(F.pad(x, pads), weight, bias), atol=0, rtol=0)
    assert list(after.shape) == list(before.shape) == [1, 384, 1, 60, 104]
    assert float((after - before).abs().max()) <= 1e-5 * float(before.abs().max())
    assert float(before.abs().max()) > 10  # not zeros: normal draws through 432 taps


def test_a_fold_s_numerics_are_compared_at_tf32_where_its_conv_ran_tf32(
    planned: tuple[TryPlan, ShapesFile],
) -> None:
    """The decode's convs allowed TF32: a fold's outputs are compared at TF32's tolerance (the
    pad and the conv padding run the same rounding of the same inputs); a fusion chain of fp32
    ops at fp32's, one of bf16 ops at bf16's."""
    from ncu_classify.tries.results import _precision

    recorded, own = _chains(planned[1], 1)
    assert _precision(recorded) == _precision(own) == "tf32"
    plain = recorded.model_copy(update={"allow_tf32": None})
    assert _precision(plain) == "fp32"
    halved = [i.model_copy(update={"tensor": i.tensor.model_copy(update={"dtype": "bfloat16"})})
              for i in recorded.chain.inputs]  # fmt: skip
    bf16 = plain.model_copy(update={"chain": recorded.chain.model_copy(update={"inputs": halved})})
    assert _precision(bf16) == "bf16"
    assert recorded.key().endswith(":tf32") and not plain.key().endswith("tf32")


def _recorded_model(tmp_path: Path, chains: bool) -> ShapesFile:
    """A causal conv in small (diffusers' WanCausalConv3d: F.pad, then the conv with padding
    0) on 1x8x3x6x6 fp32 (3,456 bytes), beside pads that cannot fold: a time conv's one-sided
    pad, a pad of ones."""
    torch = import_or_skip("torch")
    import torch.nn.functional as F

    from ncu_classify.record.document import shapes_yaml, validated_document
    from ncu_classify.record.recorder import Recorder

    class Causal(torch.nn.Module):
        def __init__(self, kernel: object, pads: tuple[int, ...], value: float = 0.0) -> None:
            super().__init__()
            self.conv = torch.nn.Conv3d(8, 8, kernel)  # type: ignore[arg-type]
            self.pads, self.value = pads, value

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(F.pad(F.silu(x), self.pads, value=self.value))

    blocks = [Causal(3, (1, 1, 1, 1, 2, 0)), Causal((3, 1, 1), (0, 0, 0, 0, 2, 0)),
              Causal(3, (1, 1, 1, 1, 1, 1), value=1.0), Causal(3, (1, 1, 1, 1, 1, 1))]  # fmt: skip
    net = torch.nn.Sequential(torch.nn.Conv3d(4, 8, 1), *blocks).eval()
    torch.manual_seed(0)
    recorder = Recorder(roots={"net": net}, chains=chains)
    with recorder, torch.no_grad():
        net(torch.randn(1, 4, 3, 6, 6))
    path = tmp_path / "net.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    return load_shapes(path)


@pytest.mark.needs("torch")
def test_a_recorded_causal_conv_folds_and_the_others_say_why(tmp_path: Path) -> None:
    """Recorded on the CPU (untimed: the most called first, then by name): the causal pad and
    the symmetric one fold; the time conv's and the pad of ones are passed over with why; a
    recording without chains says once that no pad can be tied."""
    shapes = _recorded_model(tmp_path, chains=True)
    plan, _ = plan_tries(NO_CARDS, shapes, ("c", "s"), 1, [], folds=5)
    pad = "net:aten.constant_pad_nd.default:1x8x3x6x6:fp32"
    assert [(m.group, m.calls) for m in plan.moves] == [
        ("net:fold:aten.constant_pad_nd.default:1x8x3x6x6:fp32", 1),
        ("net:fold:aten.constant_pad_nd.default:1x8x3x6x6:fp32:4", 1),
    ]
    assert [t.why for t in plan.moves[1].tries] == [
        "the pad [1, 1, 1, 1, 1, 1], then the conv, as the program runs them",
        "the pad copies its whole input (3.5 kB read, 10.2 kB written), its time unknown (no"
        " card, not timed at record); the conv pads inside its kernel: padding [1, 1, 1], no"
        " pad left",
    ]
    nothing = (
        "nothing to fold: the stage records no constant_pad_nd (its convs pad in their kernels)"
    )
    assert [(p.group, p.why) for p in plan.no_alternative] == [
        ("main:fold", nothing),  # the recording's other stage: no pad, said
        (f"{pad}:2", "not folded: its pads [0, 0, 0, 0, 2, 0] are one-sided: nothing folds"
         " into a conv's symmetric padding"),
        (f"{pad}:3", "not folded: it pads with 1.0: a conv pads with zeros"),
    ]  # fmt: skip
    bare = _recorded_model(tmp_path, chains=False)
    plan, _ = plan_tries(NO_CARDS, bare, ("c", "s"), 1, [], folds=5)
    assert not plan.moves
    assert [(p.group, p.why) for p in plan.no_alternative] == [
        ("main:fold", nothing),
        ("net:fold", "not folded: the recording keeps no chains (record --chains): no pad can"
         " be tied to its conv")
    ]  # fmt: skip


def test_next_counts_the_pad_folds_in_the_stage_s_line(wan: CardFile) -> None:
    """Folds are no cards: `next --tries` counts them in the stage's line and names them among
    the moves it cannot show. The chains tries of the H200 with its last three moves read as
    folds (two that did not win, one of 1,810.08 us that did)."""
    from ncu_classify.present.next_measured import stage_line, tries_notes
    from ncu_classify.present.next_moves import next_moves
    from ncu_classify.tries.results import load_results

    result = load_results(ROOT / "fixtures" / "tries_h200" / "chains_vae" / "tries.json")
    for move in result.moves[-3:]:
        move.op = "fold"
    (stage,) = next_moves(wan, "wan.json", ["vae"], [("t.json", result)]).measured
    assert (stage.chains_tried, stage.chains_won, stage.chains_saving_us) == (3, 3, 15779.028)
    assert (stage.folds_tried, stage.folds_won, stage.folds_saving_us) == (3, 1, 1810.08)
    assert stage_line(stage, 306613.7).endswith(
        "; pad folds: 1 of 3 pads folded into their convs win 1,810.1 us"
    )
    calls = {c.group: c.calls for c in wan.cards}
    assert tries_notes(calls, "wan.json", {"vae"}, [("t.json", result)])[0] == (
        "t.json: 6 of its 7 moves name no card of wan.json (3 of them chains of device ops, 3"
        " of them pad folds, which are no cards): not shown"
    )


@pytest.mark.needs("torch")
def test_the_replay_loop_runs_a_fold_and_its_numerics_agree(
    planned: tuple[TryPlan, ShapesFile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both shapes of a fold through the capture's replay loop on the CPU (CUDA calls stubbed
    out, the chains drawn on the CPU): each runs under the conv's recorded TF32 setting, writes
    its output sample, and `try`'s numerics find them equal within TF32's tolerance."""
    torch = import_or_skip("torch")
    from ncu_classify.replay import chain as chain_replay
    from ncu_classify.replay import target as replay
    from ncu_classify.replay.protocol import BatchFile, sample_stem
    from ncu_classify.tries.numerics import compare_outputs

    for name, stub in (("empty_cache", lambda: None), ("synchronize", lambda: None)):
        monkeypatch.setattr(torch.cuda, name, stub)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    on_cpu = chain_replay.chain_runner
    monkeypatch.setattr(
        replay, "chain_runner", lambda c, mode, device, *rest: on_cpu(c, mode, "cpu", *rest)
    )
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    batch = BatchFile(
        seed=0, warmup=1, cudnn_benchmark=False, entries=[], outputs_dir=str(tmp_path)
    )
    entries = [e for e in planned[1].entries() if e.group.startswith("vae:f16.")]
    assert [e.group for e in entries] == ["vae:f16.as_recorded", "vae:f16.conv_padding"]
    shas = [replay.replay_one(entry, batch)["input_sha256"] for entry in entries]
    assert shas[0] == shas[1] and torch.backends.cudnn.allow_tf32 is True
    stems = [sample_stem(e.group) for e in entries]
    numerics = compare_outputs(tmp_path, stems[0], stems[1], "tf32")
    assert numerics.compared and numerics.within and numerics.tolerance_of == "tf32"
    assert numerics.max_rel_error is not None and numerics.max_rel_error <= 1e-5
