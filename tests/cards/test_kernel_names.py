"""Fidelity's cause by kernel name (issue 41, item 4): torch.profiler's names (as record keeps
them, cut at 160 characters) and ncu's (the H200 cards of fixtures/compiled_h200/cap) come to
one base name; the compiled block launched in its replay exactly the kernels the program did
(so the cause stays caches or clocks); a replay that lacks the program's copy kernel names it."""

from __future__ import annotations

import lzma
from collections import Counter
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cards.fidelity import fidelity, fidelity_note
from ncu_classify.cards.kernel_names import base_name, is_copy, kernel_cause, launches
from ncu_classify.cards.model import Card, CardFile
from ncu_classify.present.coverage import fidelity_rows
from ncu_classify.verdicts.rules import LoadedRules

HERE = ROOT / "fixtures" / "compiled_h200"
COPY = "the program's input was likely a strided view"
# torch.profiler's name of ATen's copy kernel, as record kept it (the compiled Wan decode)
PROFILER_COPY = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native"
    "::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::opera"
)
CONV = (
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x128x64_"
    "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"
)
CACHES = "ncu flushes caches between passes; the program's caches are warm"
CLOCKS = "the program ran it slower: contention with overlapping work, or clocks"


@pytest.fixture(scope="module")
def cards(rules) -> dict[str, Card]:  # type: ignore[no-untyped-def]
    """The compiled block's capture classified here: its cards by op."""
    from ncu_classify.verdicts.classify import classify

    found = classify([HERE / "cap"], rules, jobs=1)
    return {card.op: card for card in found.cards}


def test_profiler_and_ncu_names_come_to_one_base_name(cards: dict[str, Card]) -> None:
    """ATen's copy and random-normal kernels as ncu names them (`(int)128`, `<unnamed>`, the
    whole signature) and as torch.profiler did (`128`, cut by record mid-template); the
    recording's own names (Triton's, cuDNN's) are their base names already."""
    copy = cards["aten._to_copy.default"].kernels[0].kernel
    assert copy.startswith("void at::native::elementwise_kernel<(int)128, (int)4, void at::")
    assert base_name(copy) == base_name(PROFILER_COPY) == "elementwise_kernel"
    assert is_copy(copy) and is_copy(PROFILER_COPY)
    normal = cards["aten.randn.default"].kernels[0].kernel
    assert normal.startswith("void at::native::<unnamed>::distribution_elementwise_grid")
    assert base_name(normal) == "distribution_elementwise_grid_stride_kernel"
    assert not is_copy(normal)
    decode = lzma.decompress((HERE / "wan_decode_shapes.yaml.xz").read_bytes()).decode()
    assert f'"{PROFILER_COPY}"' in decode  # the name as the H200's recording holds it
    recorded = cards["compiled"].shape_parameters["kernels"]
    assert [base_name(name) for name in recorded] == recorded
    cutlass = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x128_32x3_nn_align4>(cut"
    assert base_name(cutlass) == "Kernel2"
    assert base_name("void (anonymous namespace)::softmax_warp_forward<float>(int)") == (
        "softmax_warp_forward"
    )


def test_the_compiled_block_replays_the_program_s_kernels(cards: dict[str, Card]) -> None:
    """The recording named the 9 kernels the block's graph launched (8 of Inductor's, cuDNN's
    conv); the replay launched 13, all of those names (three norms and the conv twice): no
    kernel is missing or extra, so a replay far from the program's time would still be put
    down to caches or clocks (this one is 0.75 % off: no note)."""
    card = cards["compiled"]
    found = launches(card)
    assert found is not None and len(found) == 9
    assert sum(item.replayed for item in found) == 13
    assert all(item.program is None and item.replayed for item in found)
    assert kernel_cause(card) is None
    assert fidelity_note(card, 1.2) == CACHES and fidelity_note(card, 0.8) == CLOCKS
    measured = fidelity(card)
    assert measured is not None and (measured.ratio, measured.note) == (1.0075, None)


def _strided_conv(cards: dict[str, Card]) -> Card:
    """A conv whose input was a strided view: the program ran ATen's copy, then cuDNN's conv
    (names as torch.profiler gave them); the replay's contiguous input ran the conv alone
    (the H200 card's cuDNN kernel). Ratio 0.45, as issue 41's 1x1x1 conv3d."""
    block = cards["compiled"]
    conv = next(k for k in block.kernels if k.kernel == CONV)
    return block.model_copy(
        update={
            "group": "vae:conv3d:strided",
            "op": "aten.convolution.default",
            "shape_parameters": {},
            "kernels": [conv],
            "summed_kernel_us": round(conv.metrics["dur_us"], 3),
            "real_us": round(conv.metrics["dur_us"] / 0.45, 3),
            "real_kernels": 2.0,
            "real_kernel_names": {PROFILER_COPY: 1.0, CONV: 1.0},
        }
    )


def test_a_missing_copy_kernel_is_named_as_the_cause(cards: dict[str, Card]) -> None:
    card = _strided_conv(cards)
    measured = fidelity(card)
    assert measured is not None and measured.ratio == 0.45
    assert measured.note == (
        "1 kernel replayed, 2 per call in the program; the program ran a copy kernel,"
        " `direct_copy_kernel` (1 per call), that the replay did not: its input was likely a"
        " strided view; the replay's is contiguous"
    )
    assert "contention" not in measured.note  # the cache or clock note is not the cause here
    rows = fidelity_rows(_file([card]), off_only=True)
    assert [(row.group, row.note) for row in rows] == [(card.group, measured.note)]


def test_other_kernels_missing_extra_or_launched_more_are_named(cards: dict[str, Card]) -> None:
    """Not a copy: the kernels are named as they differ, each with its launches per call
    beyond the other side's; kernels launched alike are not named."""
    block = cards["compiled"]
    names = {name: 1.0 for name in block.shape_parameters["kernels"]}
    names["triton_per_fused_clone_native_group_norm_1"] = 3.0  # the replay ran it twice
    names["triton_per_fused_clone_native_group_norm_2"] = 2.0  # as the replay did
    names["triton_per_fused_clone_native_group_norm_3"] = 1.6  # 0.4 apart: alike
    names["void at::native::vectorized_elementwise_kernel<4, at::native::silu>(int)"] = 0.5
    names["void cudnn::engines_precompiled::nchwToNhwcKernel<float, float>(int)"] = 1.0
    del names[CONV]  # the replay's conv is extra
    card = block.model_copy(update={"real_kernel_names": names})
    assert kernel_cause(card) == (
        "the program ran `triton_per_fused_clone_native_group_norm_1` (1 more per call),"
        " `vectorized_elementwise_kernel` (0.5 per call), `nchwToNhwcKernel` (1 per call), the"
        f" replay did not; the replay ran `{CONV}` (2 per call), the program did not"
    )
    note = fidelity_note(card, 1.2)
    assert CACHES not in note and note.startswith("the program ran `triton_per")


def test_cards_without_the_program_s_names_keep_the_old_note(cards: dict[str, Card]) -> None:
    """Cards of recordings made before names were kept (and not compiled): no kernel cause,
    the note as before."""
    card = cards["aten._to_copy.default"]
    assert card.real_kernel_names is None and launches(card) is None
    assert fidelity_note(card, 0.8) == CLOCKS


def _file(cards: list[Card]) -> CardFile:
    return CardFile(generated_at=None, tool_version=None, rules="default", rules_id=None,
                    rules_file=None, rules_sha256=None, inputs=[], cards=cards, summary={},
                    by_stage={})  # fmt: skip


def test_capture_hands_the_program_s_names_to_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: LoadedRules
) -> None:
    """The block's recording with the profiler's name of its channels-last copy kept on the
    `_to_copy` shape, captured with the stand-in ncu serving the H200's reports: the manifest
    line and the card carry the names (the other shapes' lines have no such field), and the
    card's ncu name is the same kernel: no kernel cause."""
    import json
    import os

    from ncu_classify.cli.entry import run
    from ncu_classify.verdicts.classify import classify

    text = (HERE / "shapes.yaml").read_text()
    line = next(row for row in text.splitlines() if "aten._to_copy.default" in row)
    names = f'real_kernel_names: {{"{PROFILER_COPY}": 1.0}}'
    named = line.replace("real_kernels: 1.0}", f"real_kernels: 1.0, {names}}}")
    (tmp_path / "shapes.yaml").write_text(text.replace(line, named))
    monkeypatch.setenv("PATH", f"{ROOT / 'tests' / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(HERE / "cap"))
    raw = tmp_path / "raw"
    assert run(["capture", "--shapes", str(tmp_path / "shapes.yaml"), "-o", str(raw)]) == 0
    lines = json.loads((raw / "manifest.json").read_text())["shapes"]  # largest first
    found = {line["group"].split(":")[1]: line for line in lines}
    assert {op: line.get("real_kernel_names") for op, line in found.items()} == {
        "compiled": None, "aten.randn.default": None, "aten._to_copy.default": {PROFILER_COPY: 1.0}
    }  # fmt: skip
    assert sum("real_kernel_names" in line for line in lines) == 1
    card = next(c for c in classify([raw], rules, jobs=1).cards if c.op == "aten._to_copy.default")
    assert card.real_kernel_names == {PROFILER_COPY: 1.0}
    assert kernel_cause(card) is None and fidelity_note(card, 1.2) == CACHES


def test_a_name_record_cut_inside_its_base_name_still_matches() -> None:
    """cuDNN's indexed conv kernel is 167 characters long: the compiled Wan decode's recording
    kept its first 160, ncu (the committed 480x832 workload's cards) the whole; the card's
    conv is the program's (tests/record/test_timing.py: record cuts where this expects)."""
    from ncu_classify.cards.files import load_card_file
    from ncu_classify.cards.kernel_names import CUT_AT

    stem = "sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_tf32f32_tf32f32_f32_nhwckrsc_nhwc_"
    workload = load_card_file(ROOT / "fixtures" / "workload_h200_480x832" / "cards.json")
    card = next(c for c in workload.cards if any(k.kernel.startswith(stem) for k in c.kernels))
    full = next(k.kernel for k in card.kernels if k.kernel.startswith(stem))
    decode = lzma.decompress((HERE / "wan_decode_shapes.yaml.xz").read_bytes()).decode()
    assert (len(full), f'"{full[:CUT_AT]}"' in decode, f'"{full}"' in decode) == (167, True, False)
    others = {
        name: float(count)
        for name, count in Counter(k.kernel for k in card.kernels).items()
        if not name.startswith(stem)
    }
    named = card.model_copy(update={"real_kernel_names": {full[:CUT_AT]: 1.0, **others}})
    assert kernel_cause(named) is None
    cut_short = card.model_copy(update={"real_kernel_names": {full[:100]: 1.0, **others}})
    assert kernel_cause(cut_short) is not None  # only record's own cut is read as one


def test_every_view_gives_the_kernel_cause(cards: dict[str, Card], tmp_path: Path) -> None:
    """`summary --by fidelity` (the CSV, every timed card) and the pages' fidelity tables
    (HTML, Markdown) give the missing copy kernel as the strided conv's cause."""
    import csv
    import html

    from ncu_classify.cards.files import write_card_file
    from ncu_classify.cli.entry import run
    from ncu_classify.core.text import md_text
    from ncu_classify.present.page import page_html, page_markdown

    card = _strided_conv(cards)
    note = fidelity(card).note  # type: ignore[union-attr]
    assert note is not None and "`direct_copy_kernel` (1 per call)" in note
    path = tmp_path / "cards.json"
    write_card_file(path, _file([card, cards["compiled"]]))
    out = tmp_path / "fidelity.csv"
    assert run(["summary", str(path), "--by", "fidelity", "--csv", "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(row["group"], row["note"]) for row in rows] == [
        (card.group, note),
        (cards["compiled"].group, ""),
    ]
    loaded = [("cards.json", _file([card]))]
    escaped = html.escape(note, quote=False).replace("'", "&#39;")
    assert f"<td>{escaped}</td>" in page_html(loaded, "t")
    assert f"| 0.450 | {md_text(note)} |" in page_markdown(loaded, "t")


def test_a_name_cut_inside_its_template_matches_only_its_own_base(
    cards: dict[str, Card],
) -> None:
    """The recording's copy kernel, cut inside its template arguments, is `elementwise_kernel`
    and no longer name that merely starts alike (the replay's `elementwise_kernel_with_index`
    is another kernel)."""
    copy = cards["aten._to_copy.default"]
    kernel = copy.kernels[0].model_copy(
        update={"kernel": "void at::native::elementwise_kernel_with_index<int>(int)"}
    )
    card = copy.model_copy(update={"kernels": [kernel], "real_kernel_names": {PROFILER_COPY: 1.0}})
    assert kernel_cause(card) == (
        "the program ran a copy kernel, `direct_copy_kernel` (1 per call), that the replay did"
        " not: its input was likely a strided view; the replay's is contiguous; the replay ran"
        " `elementwise_kernel_with_index` (1 per call), the program did not"
    )
