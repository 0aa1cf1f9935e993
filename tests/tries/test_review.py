"""A hostile review of the measured moves (issue 39): each op counted once across stages and
tries files, the committed H200 results' totals as `try` counts them today, the pad folds'
ties, and a chain's outputs read through a view, each from the real fixtures where they can."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cards.model import CardFile
from ncu_classify.present.next_moves import next_moves
from ncu_classify.present.next_text import stage_notes
from ncu_classify.shapes.file import load_shapes
from ncu_classify.tries.overlap import counted_once
from ncu_classify.tries.plan import plan_tries
from ncu_classify.tries.results import TryResults, load_results

TRIES = ROOT / "fixtures" / "tries_h200"
NO_CARDS = CardFile.model_construct(cards=[])


def _host(name: str) -> TryResults:
    """A committed tries.json as the H200 wrote it."""
    return TryResults.model_validate_json((TRIES / name / "tries.json").read_text())


def test_a_cast_of_another_stage_is_not_inside_this_stage_s_chains(tmp_path: Path) -> None:
    """LTX's DiT cast bf16 -> fp32 1x660x2048 (x168) runs 167 calls inside the DiT's winning
    chains. The same cast tried in another stage (a VAE of the same dims) is another op: its
    saving counts whole (it was taken out as if the DiT's chains held it: 645.12 us -> 3.84)."""
    text = (TRIES / "ltx_dit" / "shapes.yaml").read_text()
    cast = next(line for line in text.splitlines() if '"name": "m01.as_recorded"' in line)
    (tmp_path / "shapes.yaml").write_text(text + '  "vae":\n' + cast + "\n")
    shapes = load_shapes(tmp_path / "shapes.yaml")
    host = _host("ltx_dit")
    vae = host.moves[0].model_copy(
        update={"stage": "vae", "group": "vae:cast:1x660x2048:bf16-fp32", "original": host.moves[0]
                .original.model_copy(update={"group": "vae:m01.as_recorded"})},
    )  # fmt: skip
    savings, overlap = counted_once([*host.moves, vae], shapes)
    assert savings == {"dit": 6032.273, "vae": 645.12}
    assert overlap == {"dit": 1587.873}


@pytest.mark.parametrize("name", sorted(p.name for p in TRIES.iterdir() if p.is_dir()))
def test_each_committed_tries_total_counts_each_op_once(name: str) -> None:
    """Every committed tries.json's stage totals are what `try` counts today from its own
    moves and shapes: LTX's DiT (written by the H200 before the overlap was counted) said
    7,620.1 us with no overlap, so `next --tries` said the double count."""
    host = _host(name)
    savings, overlap = counted_once(host.moves, load_shapes(TRIES / name / "shapes.yaml"))
    assert (host.stage_savings_us, host.overlap_us) == (savings, overlap)
    if name == "ltx_dit":
        assert (savings, overlap) == ({"dit": 6032.273}, {"dit": 1587.873})


def _stage_line(wan: CardFile, names: list[tuple[str, Path]]) -> str:
    """`next --tries` of the Wan decode's cards with these tries files: the VAE's stage line."""
    tries = [(label, load_results(path)) for label, path in names]
    (line,) = [n for n in stage_notes(next_moves(wan, "wan.json", ["vae"], tries))
               if n.startswith("vae: measured:")]  # fmt: skip
    return line


def test_a_fold_or_chain_measured_in_two_tries_files_counts_once(
    wan: CardFile, tmp_path: Path
) -> None:
    """The decode's folds given twice (a copy of the run under another name) said `8 of 16
    pads folded into their convs win 18,705.9 us`: each fold is counted once, from the last
    file, as a card's move measured twice is shown from the last."""
    (tmp_path / "tries.json").write_bytes((TRIES / "folds_vae" / "tries.json").read_bytes())
    line = _stage_line(wan, [("folds", TRIES / "folds_vae" / "tries.json"),
                             ("again", tmp_path / "tries.json")])  # fmt: skip
    assert line.endswith("; pad folds: 4 of 8 pads folded into their convs win 9,353.0 us")
    from ncu_classify.present.next_measured import tries_notes

    tries = [(n, load_results(p)) for n, p in (("folds", TRIES / "folds_vae" / "tries.json"),
                                              ("again", tmp_path / "tries.json"))]  # fmt: skip
    calls = {c.group: c.calls or 0 for c in wan.cards}
    assert tries_notes(calls, "wan.json", {"vae"}, tries)[-1] == (
        "again: 8 of its chains and folds were measured in folds too: again's counted in the"
        " stage line"
    )  # said (was silent)


def test_a_pad_compiled_in_one_file_and_folded_in_another_counts_once(wan: CardFile) -> None:
    """The decode's pad 1x96x6x480x832 compiled alone (vae/tries.json, x7: 3,056.6 us) is the
    pad that folds_vae/tries.json folds into its conv (x7, winning): the stage line says its
    saving is inside the fold too (it said nothing: both were added by the reader)."""
    line = _stage_line(wan, [("vae", TRIES / "vae" / "tries.json"),
                             ("folds", TRIES / "folds_vae" / "tries.json")])  # fmt: skip
    assert line == (
        "vae: measured: 9 of 10 moves tried win 115,604.2 us [115,157.9, 116,050.4] of"
        " 306,613.7 us per inference; 3,056.6 us of the moves' savings are inside the winning"
        " chains or folds too; pad folds: 4 of 8 pads folded into their convs win 9,353.0 us"
    )


def _dense(shape: list[int], dtype: str = "float32") -> dict[str, object]:
    """A row-major tensor of `shape` as a shapes file writes one."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return {"shape": shape, "dtype": dtype, "strides": strides, "offset": 0}


def _conv(name: str, dtype: str, padding: list[int]) -> dict[str, object]:
    """A device op's conv (`aten.convolution`) reading 1x4x6x10x10, as record writes one."""
    tensors = [{"tensor": _dense(shape, dtype)} for shape in ([1, 4, 6, 10, 10], [4, 4, 3, 3, 3])]
    args = [*tensors, None, [1, 1, 1], padding, [1, 1, 1], False, [0, 0, 0], 1]
    out = [d + 2 * p - 2 for d, p in zip([6, 10, 10], padding, strict=True)]
    return {"op": "aten", "name": name, "overload": "aten.convolution.default", "args": args,
            "outputs": [_dense([1, 4, *out], dtype)], "calls": 2}  # fmt: skip


def _edited(conv_dtype: str, readers: list[str]) -> str:
    """A shapes file as a hostile user edits one: a causal pad (1, 1, 1, 1, 2, 0) of an fp32
    1x4x4x8x8, its chain's output read by the heavy ops `readers` (`before`)."""
    x, padded = _dense([1, 4, 4, 8, 8]), _dense([1, 4, 6, 10, 10])
    pads = [1, 1, 1, 1, 2, 0]
    pad = {"op": "aten", "name": "aten.constant_pad_nd.default:p", "calls": 2,
           "outputs": [padded], "overload": "aten.constant_pad_nd.default",
           "args": [{"tensor": x}, pads, 0.0]}  # fmt: skip
    op = {"overload": "aten.constant_pad_nd.default", "args": [{"input": 0}, pads, 0.0],
          "outputs": [padded], "shape": "vae:aten.constant_pad_nd.default:p"}  # fmt: skip
    chain = {"name": "vae:chain:constant_pad_nd:1x4x4x8x8:fp32", "calls": 2, "before": readers,
             "inputs": [{"tensor": x, "from": ["program input"]}], "ops": [op],
             "outputs": [{"ref": [0, 0]}]}  # fmt: skip
    convs = [_conv("aten.convolution.default:x", conv_dtype, [0, 0, 0]),
             _conv("aten.convolution.default:y", "float32", [1, 1, 1])]  # fmt: skip
    lines = [json.dumps(line) for line in (pad, *convs)]
    return (
        'stages:\n  "vae":\n'
        + "".join(f"    - {line}\n" for line in lines)
        + (f'chains:\n  "vae":\n    - {json.dumps(chain)}\n')
    )


@pytest.mark.parametrize(
    ("conv_dtype", "readers", "why"),
    [
        ("float32", ["x"], None),
        # a bf16 conv was tied to the fp32 pad: both replays would fail (input and weight types)
        ("bfloat16", ["x"], "its output (1x4x6x10x10) feeds no conv of padding 0"),
        # another heavy op reads the padded tensor too: the pad stays (it was folded)
        ("float32", ["x", "y"], "vae:aten.convolution.default:y reads its output too: the pad"
         " would stay"),
    ],
)  # fmt: skip
def test_a_pad_folds_only_into_a_conv_of_its_dtype_that_alone_reads_it(
    conv_dtype: str, readers: list[str], why: str | None, tmp_path: Path
) -> None:
    """A device op's conv (`aten.convolution`) is tied to a pad only when it reads the pad's
    tensor as written (sizes, dtype, layout), and only when no other heavy op reads it."""
    path = tmp_path / "edited.yaml"
    path.write_text(_edited(conv_dtype, [f"vae:aten.convolution.default:{r}" for r in readers]))
    plan, _ = plan_tries(NO_CARDS, load_shapes(path), ("c", "s"), 1, ["vae"], folds=5)
    folds = [m.group for m in plan.moves if m.op == "fold"]
    passed = [(n.group, n.why) for n in plan.no_alternative]
    if why is None:
        assert folds == ["vae:fold:aten.constant_pad_nd.default:p"] and passed == []
    else:
        assert folds == []
        assert passed == [("vae:aten.constant_pad_nd.default:p", f"not folded: {why}")]


WAN_DIT4 = ROOT / "reports" / "tries" / "wan_dit4_480x832_h200_shapes.yaml.xz"
WRITE_VIEW = '"as_strided": {"shape": [1, 4680, 40, 64], "strides": [23961600, 5120, 128, 2]'
LEAVING_VIEW = '"as_strided": {"shape": [1, 40, 4680, 128], "strides": [23961600, 128, 5120, 1]'


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ((WRITE_VIEW, WRITE_VIEW.replace("5120, 128, 2", "5120, 2")),
         r"164:68: chains.dit.2.ops.16.args.0.as_strided: as_strided .*: 4 sizes but 3 strides"),
        ((LEAVING_VIEW, LEAVING_VIEW.replace("5120, 1]", "5120]")),
         r"166:34: chains.dit.2.outputs.0.as_strided: .*4 sizes but 3 strides"),
    ],
)  # fmt: skip
def test_a_hand_edited_chain_view_without_a_stride_per_dim_is_refused_at_load(
    edit: tuple[str, str], said: str, tmp_path: Path
) -> None:
    """The Wan DiT's rotary chain (written through a slice, read whole) with a stride dropped
    from a view: refused where the file is read, one line naming the line and the place (was:
    planned, and only the GPU's replay of the chain would have failed)."""
    from ncu_classify.core.errors import InputFileError

    text = lzma.decompress(WAN_DIT4.read_bytes()).decode()
    assert text.count(edit[0]) >= 1
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(InputFileError, match=said):
        load_shapes(path)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ([{"float": "nan"}, [1, 1, 1, 1, 2, 0], 0.0], "its input is no tensor of its chain"),
        ([{"input": 0}, [1, 1, 1], 0.0], "its pads [1, 1, 1] are no (before, after) pairs"),
    ],
)
def test_a_hand_edited_pad_is_passed_over_with_why(
    args: list[object], why: str, tmp_path: Path
) -> None:
    """A pad whose input is a number, or whose pads are no pairs, in a hand-edited shapes file:
    passed over with why (were: KeyError 'ref', IndexError, a traceback from --plan-only)."""
    text = _edited("float32", ["vae:aten.convolution.default:x"])
    recorded = json.dumps([{"input": 0}, [1, 1, 1, 1, 2, 0], 0.0])
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(f'"args": {recorded}', f'"args": {json.dumps(args)}'))
    plan, _ = plan_tries(NO_CARDS, load_shapes(path), ("c", "s"), 1, ["vae"], folds=5)
    assert [m for m in plan.moves if m.op == "fold"] == []
    assert [(n.group, n.why) for n in plan.no_alternative] == [
        ("vae:aten.constant_pad_nd.default:p", f"not folded: {why}")
    ]


@pytest.mark.parametrize(
    ("shapes_of", "said"),
    [
        ("chains", "dit:fold: nothing to fold: the stage records no constant_pad_nd (its convs"
         " pad in their kernels)"),
        ("plain", "dit:fold: nothing to fold: the stage records no constant_pad_nd (its convs"
         " pad in their kernels)"),
    ],
)  # fmt: skip
def test_plan_only_says_a_stage_has_nothing_to_fold(
    shapes_of: str, said: str, wan_file: Path, wan_shapes: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """`try --stage dit --folds 3` on the Wan recordings (with and without chains): the DiT
    has no constant_pad_nd, and --plan-only says so (it was written in plan.json only: the
    printed lines said nothing of the folds asked for)."""
    from ncu_classify.cli.entry import run

    shapes = wan_shapes
    if shapes_of == "chains":
        shapes = tmp_path / "wan_chains.yaml"
        recorded = ROOT / "reports" / "tries" / "wan_chains_480x832_h200_shapes.yaml.xz"
        shapes.write_bytes(lzma.decompress(recorded.read_bytes()))
    options = ["--stage", "dit", "--top", "1", "--chains", "0", "--folds", "3", "--plan-only"]
    code = run(["try", str(wan_file), "--shapes", str(shapes), "-o", str(tmp_path / "t"), *options])
    assert code == 0
    assert capsys.readouterr().out.splitlines()[2:] == [said]


def test_try_s_last_line_counts_each_op_once(capsys: pytest.CaptureFixture[str]) -> None:
    """LTX's DiT as `try` prints it at the end: the winners' total counted once, the overlap
    said (the line was tested nowhere)."""
    from ncu_classify.cli.tries import print_results

    print_results(_host("ltx_dit"))
    assert capsys.readouterr().out.splitlines()[-1] == (
        "dit: the winners save 6.032 ms per inference (each op once: 1,587.9 us of per-op"
        " savings are the winning chains' or folds')"
    )


def test_a_fold_whose_pad_a_winning_chain_fuses_counts_its_other_calls(tmp_path: Path) -> None:
    """The decode's norm + SiLU chains end in the causal pad (chains_vae: c01 and c03 hold the
    pad 1x96x6x480x832, 3 + 2 calls; c02 and c04 the 1x96x5 one) and the folds remove that
    pad (folds_vae: f01, f02, 7 calls each). Tried in one run, the fused chain writes the
    padded tensor in its own kernel: the fold's saving counts for its 2 other calls only
    (6,240.36 x 5/7 and 921.06 x 5/7 = 5,115.3 us were counted twice)."""
    text = (TRIES / "chains_vae" / "shapes.yaml").read_text()
    folds = (TRIES / "folds_vae" / "shapes.yaml").read_text().splitlines()
    (tmp_path / "both.yaml").write_text(text + "".join(f"{f}\n" for f in folds if '"f0' in f))
    moves = [*_host("chains_vae").moves, *[m for m in _host("folds_vae").moves if m.op == "fold"]]
    assert round(sum(m.measured_saving_us or 0.0 for m in moves), 3) == 73124.068
    savings, overlap = counted_once(moves, load_shapes(tmp_path / "both.yaml"))
    assert overlap == {"vae": round(6240.36 * 5 / 7 + 921.06 * 5 / 7, 3)} == {"vae": 5115.3}
    assert savings == {"vae": 68008.768}
