"""What `next` says to try follows the kernel's own facts (issue 39): over every committed and
derived cards file, no advice proposes what the card's kernel already is (its instruction family
and backend read here from its name and roofline family, independently of the code under test);
exact advice on named real cards; the gating on synthetic edits of real cards."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from helpers import DERIVED, ROOT, derived_path

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.model import Card, CardFile
from ncu_classify.cards.rollup import dominant
from ncu_classify.cli.entry import run
from ncu_classify.present.advice import Advice, advise, trim, try_next
from ncu_classify.present.advice_facts import backend_of, card_facts, instructions_of
from ncu_classify.present.next_moves import next_moves
from ncu_classify.present.next_text import next_csv
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules

DIFF = ROOT / "reports" / "diff" / "cards"
WAN = ROOT / "reports" / "record" / "cards_wan14b_every_op_480x832.json"  # derived_path
DRILLED = ROOT / "reports" / "drill" / "cards_480x832_drilled.json"  # derived_path
WGMMA_NAME = re.compile(r"sm90|wgmma|gmma|nvjet", re.I)
SAYS_WGMMA = re.compile(
    r"wgmma kernel|FlashAttention-3|mma\.sync kernel|kernel for this architecture"
)


def committed_card_files() -> list[Path]:
    """Every cards file committed under reports/ and fixtures/ (a JSON with a `cards` list);
    not the derived ones regenerate.sh writes and git ignores (a fresh clone has none)."""
    found = []
    for path in sorted([*ROOT.glob("reports/**/*.json"), *ROOT.glob("fixtures/**/*.json")]):
        if path in DERIVED:
            continue
        try:
            doc = json.loads(path.read_text())
        except ValueError:  # a JSON-lines log, a gzip-packed profile: no cards file
            continue
        if isinstance(doc, dict) and isinstance(doc.get("cards"), list) and "summary" in doc:
            found.append(path)
    return found


@pytest.fixture(scope="module")
def drilled_wan() -> CardFile:
    """The Wan 14B recording with its drill-down (settled classes: cuDNN attention's too)."""
    folders = [ROOT / "fixtures" / f for f in ("record_h200_wan14b", "drill_h200_wan14b")]
    return classify(folders, load_rules(ROOT / "rules" / "roofline.yaml"), jobs=2)


def _cards(derived_cards: Path) -> list[tuple[str, Card]]:
    """(file, card) of every committed cards file and every derived one (the session's, not a
    copy regenerate.sh left under reports/)."""
    derived = sorted(derived_cards.glob("*.json"))
    names = {path.name for path in derived}
    files = [path for path in committed_card_files() if path.name not in names] + derived
    return [(path.name, card) for path in files for card in load_card_file(path).cards]


def _dtype(card: Card) -> str | None:
    """The card's dtype as its group names it (`...:bf16`, `...:fp32:tf32`, `...-bf16`)."""
    words = re.split(r"[:\-]", card.group)
    return next((w for w in words if w in ("bf16", "fp16", "fp32")), None)


def test_no_advice_proposes_what_the_kernel_already_is(
    derived_cards: Path, drilled_wan: CardFile
) -> None:
    seen = {"wgmma": 0, "cudnn": 0, "fa3": 0, "channels_last": 0, "16-bit": 0, "idle SMs": 0}
    cards = _cards(derived_cards) + [("wan14b drilled", c) for c in drilled_wan.cards]
    assert len(committed_card_files()) >= 13 and len(cards) >= 950  # 974 in a fresh clone
    for name, card in cards:
        ideas = advise(card)
        where = f"{name}: {card.group}"
        assert ideas and try_next(card) == "; ".join(a.text for a in ideas), where
        assert all(a.why for a in ideas), where
        top = dominant(card.kernels)
        kernel = top.kernel if top is not None else ""
        family = (top.roofline.family if top is not None and top.roofline else None) or ""
        text = " ; ".join(a.text for a in ideas)
        if family.startswith("hgmma") or (WGMMA_NAME.search(kernel) and "sm80" not in kernel):
            seen["wgmma"] += 1
            assert not SAYS_WGMMA.search(text), where
            assert not {a.kind for a in ideas} & {"gemm_kernel", "attention_backend"}, where
        if "cudnn" in kernel.lower():
            seen["cudnn"] += 1
            assert "cuDNN" not in text, where
        if "FlashAttnFwdSm90" in kernel:
            seen["fa3"] += 1
            assert "FlashAttention-3" not in text, where
        if card.shape_parameters.get("memory_format") in ("channels_last", "channels_last_3d"):
            seen["channels_last"] += 1
            assert "channels_last" not in text, where
        if _dtype(card) in ("bf16", "fp16") and not card.group.endswith("-fp32"):
            seen["16-bit"] += 1
            assert "TF32" not in text and "bf16 instead" not in text, where
        if family.endswith("tf32"):
            assert "TF32 or bf16" not in text and "FP32 pipe" not in text, where
        grid = top.metrics.get("grid") if top is not None else None
        sms = card.gpu.sm_count
        if grid is not None and sms and grid <= 0.75 * sms:
            seen["idle SMs"] += 1
            assert "the bytes move once" not in text, where
        if "the bytes move once" in text:  # said only of a kernel bound by its bytes
            metrics = top.metrics if top is not None else {}
            bound = max(metrics.get("dram_pct") or 0.0, metrics.get("l2_pct") or 0.0) >= 60
            classes = {card.primary, top.classification if top is not None else None}
            assert bound or classes & {"dram_bandwidth_bound", "l2_bandwidth_bound"}, where
    # every check above met real cards: none passes for want of a case
    assert min(seen.values()) >= 10, seen


def _card(path: Path, group: str) -> Card:
    return next(c for c in load_card_file(path).cards if c.group == group)


def test_the_wan_vae_norm_under_one_wave_is_told_more_ctas(derived_cards: Path) -> None:
    """The Wan VAE's RMS norm (`linalg_vector_norm`): its reduce_kernel runs 49 CTAs on 132
    SMs at 12 % of DRAM; more CTAs (Inductor's split reduction), not 'the bytes move once'."""
    card = _card(
        derived_path(WAN, derived_cards), "vae:aten.linalg_vector_norm.default:1x384x1x60x104:fp32"
    )
    assert advise(card) == [
        Advice(
            kind="more_ctas",
            text="more CTAs: split the reduction over more CTAs (torch.compile: Inductor splits"
            " it) or batch: 49 CTAs on 132 SMs",
            why=[
                "grid: 49 CTAs on 132 SMs",
                "dram_pct 12.1 %",
                "kernel at::native::reduce_kernel (fp32)",
                "class partial_wave_tail",
            ],
        )
    ]


def test_an_ncdhw_conv3d_is_told_channels_last_3d_with_its_transposes_time(
    derived_cards: Path,
) -> None:
    group = "vae:conv3d:in1x96x6x482x834_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    ideas = advise(_card(derived_path(WAN, derived_cards), group))
    assert [a.kind for a in ideas] == ["layout", "dtype"]
    assert ideas[0] == Advice(
        kind="layout",
        text="channels_last_3d: drops 3 layout transposes (890.4 us per call)",
        why=[
            "3 nchwToNhwc/nhwcToNchw kernels on the card: 890.4 us per call",
            "memory_format contiguous",
        ],
    )
    # the kernel is cuDNN's sm90 TF32 wgmma kernel: bf16, never 'a wgmma kernel'
    assert ideas[1].text == "bf16 instead of TF32 (wgmma bf16 peak is 2x TF32's)"
    assert ideas[1].why[1].startswith("it runs TF32 (hgmma_tf32): kernel sm90_xmma_fprop_implicit")


def test_a_wgmma_gemm_gets_no_kernel_family_advice(derived_cards: Path) -> None:
    wan = derived_path(WAN, derived_cards)
    [at_roof] = advise(_card(wan, "dit:linear:M4680_N5120_K5120:bf16:bias"))
    assert at_roof.kind == "at_roof" and at_roof.text == (
        "no kernel move: it is wgmma already, at 94 % of its compute roof; what is left is fewer"
        " FLOPs or bytes (the shape, the calls)"
    )
    assert at_roof.why == [
        "kernel nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT (nvjet, wgmma, hgmma_bf16)",
        "pct_of_roof 93.8",
        "useful_over_executed 0.985",
    ]
    # before: 'A wgmma kernel for the same shape (cuBLASLt/cuDNN heuristics, another tile), ...'
    drilled = derived_path(DRILLED, derived_cards)
    assert try_next(_card(drilled, "dit:linear:M4680_N5120_K5120:bf16:bias")).startswith(
        "no kernel move: it is wgmma already, at "
    )
    [padding] = advise(_card(drilled, "dit:linear:M4680_N5120_K144:bf16:bias"))
    assert (padding.kind, padding.text) == (
        "tile_padding",
        "useful FLOPs are 74 % of those executed: a tile that pads less",
    )


def test_a_tf32_attention_is_told_bf16_not_the_fp32_pipe(derived_cards: Path) -> None:
    """PyTorch's efficient attention on fp32 runs TF32 mma.sync (hmma_tf32): before, 'TF32 or
    bf16: in fp32 it runs on the FP32 pipe', which it does not."""
    card = _card(derived_path(WAN, derived_cards), "vae:sdpa:self_b1_h1_d384_q6240_k6240:fp32")
    assert [(a.kind, a.text) for a in advise(card)] == [
        ("dtype", "bf16 instead of TF32 (wgmma bf16 peak is 2x TF32's)"),
        ("tile_padding", "useful FLOPs are 33 % of those executed: a tile that pads less"),
    ]


def test_a_settled_cudnn_attention_keeps_its_own_counter_experiment(drilled_wan: CardFile) -> None:
    [card] = [
        c for c in drilled_wan.cards if c.group == "dit:sdpa:cross_b1_h40_d128_q4680_k512:bf16"
    ]
    assert card.settled is not None and card.settled.primary == "synchronisation"
    [idea] = advise(card)
    assert idea.kind == "counter_experiment" and idea.text.startswith("A deeper asynchronous")
    assert idea.why[0] == "class synchronisation (settled)"
    assert "(cudnn, wgmma, hgmma_bf16)" in idea.why[1]


def test_flash_attention_3_settled_on_dependency_latency_is_not_told_itself(
    derived_cards: Path,
) -> None:
    """Before: '..., or a kernel for this architecture (for mma.sync attention on Hopper: a
    wgmma kernel, FlashAttention-3 or cuDNN)' to FlashAttention-3's own wgmma kernel."""
    drilled = derived_path(
        ROOT / "reports" / "drill" / "cards_704x1280_drilled.json", derived_cards
    )
    card = _card(drilled, "attention:flash_attn_v3:cross_b1_h10_d128_q10560_k512:bf16")
    assert advise(card) == [
        Advice(
            kind="counter_experiment",
            text="More independent work per warp or more warps (occupancy)",
            why=[
                "class dependency_latency (settled)",
                "kernel cutlass::device_kernel (flash_attention_3, wgmma, hgmma_bf16)",
            ],
        )
    ]


def test_flash_attention_2_is_told_the_wgmma_backends() -> None:
    card = _card(
        DIFF / "w480_gpu0.json", "attention:flash_attn_v2:self_b1_h10_d128_q4680_k4680of29640:bf16"
    )
    [idea] = advise(card)
    assert idea.kind == "attention_backend"
    assert idea.why[0].startswith(
        "kernel pytorch_flash::flash_fwd_kernel (flash_attention_2, mma.sync"
    )
    assert idea.why[1] == "peaks per cycle: mma.sync 360,448 FLOP, wgmma 540,672"  # its own


# --- the gating on synthetic edits of real cards -------------------------------------------


def _edit_top(card: Card, **update: object) -> Card:
    """`card` with its dominant kernel changed (name, metrics merged, class)."""
    top = dominant(card.kernels)
    assert top is not None
    metrics = {**top.metrics, **update.pop("metrics", {})}  # type: ignore[dict-item]
    edited = top.model_copy(update={**update, "metrics": metrics})
    return card.model_copy(update={"kernels": [edited if k is top else k for k in card.kernels]})


MOMENTS = (
    "void at::native::<unnamed>::RowwiseMomentsCUDAKernel<c10::BFloat16, float>"
    "(long, T2, const T1 *, T2 *, T2 *)"
)


def test_the_issue_s_group_norm_gets_more_ctas_and_a_full_grid_bound_by_bytes_gets_fuse(
    derived_cards: Path,
) -> None:
    norm = _card(
        derived_path(WAN, derived_cards), "vae:aten.linalg_vector_norm.default:1x384x1x60x104:fp32"
    )
    moments = _edit_top(
        norm, kernel=MOMENTS, metrics={"grid": 32.0, "dram_pct": 1.7, "dur_us": 9862.0}
    )
    [idea] = advise(moments)
    assert idea.kind == "more_ctas" and idea.text.endswith(": 32 CTAs on 132 SMs")
    assert "kernel at::native::RowwiseMomentsCUDAKernel (fp32)" in idea.why
    full = _edit_top(moments, metrics={"grid": 1056.0, "dram_pct": 85.0})
    assert [(a.kind, a.text) for a in advise(full)] == [
        ("dtype", "bf16 with its stage: this fp32 op is bound by its bytes, bf16 halves them"),
        ("fuse", "fuse it with its producer or consumer (torch.compile): the bytes move once"),
    ]
    short = _edit_top(moments, metrics={"dur_us": 2.5})  # launch time, not CTAs nor bytes
    assert [a.kind for a in advise(short)] == ["fuse"]
    assert try_next(short).endswith("2.5 us is mostly launch")
    # no grid figure: the verdict grid_under_one_wave says it
    verdict = _edit_top(moments, metrics={"grid": None}, classification="grid_under_one_wave")
    assert try_next(verdict).endswith("fewer CTAs than one wave fills (grid_under_one_wave)")


def test_a_kernel_is_never_told_its_own_family_or_backend() -> None:
    cards = {c.group: c for c in load_card_file(DIFF / "w480_gpu0.json").cards}
    fa2 = cards["attention:flash_attn_v2:self_b1_h10_d128_q4680_k4680of29640:bf16"]
    as_cudnn = _edit_top(fa2, kernel="cudnn_sm80_fmha_fprop_kernel")  # a cuDNN mma.sync kernel
    assert (
        try_next(as_cudnn)
        == "FlashAttention-3: this mma.sync kernel tops out at 2/3 of the wgmma peak"
    )
    top = dominant(fa2.kernels)
    assert top is not None and top.roofline is not None
    wgmma = _edit_top(fa2, roofline=top.roofline.model_copy(update={"family": "hgmma_bf16"}))
    assert not SAYS_WGMMA.search(try_next(wgmma))
    conv = cards["vae:conv3d:in1x96x6x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32"]
    cl3d = conv.model_copy(
        update={"shape_parameters": {**conv.shape_parameters, "memory_format": "channels_last_3d"}}
    )
    assert [a.kind for a in advise(conv)] == ["layout", "dtype"]
    assert [a.kind for a in advise(cl3d)] == ["dtype"]
    conv_top = dominant(conv.kernels)
    assert conv_top is not None and conv_top.roofline is not None
    ffma = _edit_top(
        conv.model_copy(
            update={"shape_parameters": {**conv.shape_parameters, "allow_tf32": False}}
        ),
        kernel="sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_ffma_kernel",
        roofline=conv_top.roofline.model_copy(update={"family": "fp32"}),
    )
    assert (
        advise(ffma)[1].text
        == "TF32 or bf16: in fp32 it runs on the FP32 pipe, not the tensor pipe"
    )


DEPENDENCY = (
    "More independent work per warp or more warps (occupancy), or a kernel for this"
    " architecture (for mma.sync attention on Hopper: a wgmma kernel, FlashAttention-3 or cuDNN)"
)


def test_a_counter_experiment_loses_the_clauses_that_propose_the_kernel_itself() -> None:
    cards = {c.group: c for c in load_card_file(DIFF / "w480_gpu0.json").cards}
    fa2 = cards["attention:flash_attn_v2:self_b1_h10_d128_q4680_k4680of29640:bf16"]
    facts = card_facts(fa2)
    assert trim(DEPENDENCY, facts) == DEPENDENCY  # mma.sync: the clause is its own move
    cudnn = facts.model_copy(update={"instructions": "wgmma", "backend": "cudnn"})
    assert trim(DEPENDENCY, cudnn) == "More independent work per warp or more warps (occupancy)"
    tensor = (
        "A wgmma kernel for the same shape (cuBLASLt/cuDNN heuristics, another tile), or a shape"
        " that pads less (M, N, K multiples of the tile)"
    )
    assert trim(tensor, cudnn) == "A shape that pads less (M, N, K multiples of the tile)"
    assert trim("a wgmma kernel; FlashAttention-3", cudnn) == ""
    cl3d = facts.model_copy(update={"memory_format": "channels_last_3d", "instructions": None})
    issue = "A layout that avoids the transpose (channels_last_3d), a vectorised kernel; less"
    assert trim(issue, cl3d) == "Less"


CUDNN_SDPA = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1"
FA2 = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)"
FA3 = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<>>>"
EFFICIENT = "fmha_cutlassF_f32_aligned_32x128_gmem_sm80(PyTorchMemEffAttention::AttentionKernel)"
FFMA = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4"
CUTLASS_80 = (
    "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>(T1::Params)"
)


@pytest.mark.parametrize(
    ("name", "family", "instructions", "backend"),
    [
        (CUDNN_SDPA, None, "wgmma", "cudnn"),
        (FA2, None, "mma.sync", "flash_attention_2"),
        (FA3, None, "wgmma", "flash_attention_3"),
        (EFFICIENT, None, "mma.sync", "efficient"),
        ("nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT", None, "wgmma", "nvjet"),
        (FFMA, None, "fp32 pipe", None),
        (FFMA, "fp32", "fp32 pipe", None),
        (CUTLASS_80, None, "mma.sync", "cutlass"),
        (CUTLASS_80, "hgmma_tf32", "wgmma", "cutlass"),  # the family outranks the name
        ("void at::native::reduce_kernel<128, 4>(T3)", "fp32", None, None),
        (MOMENTS, "fp32", None, None),
    ],
)
def test_what_a_kernel_is_from_its_name_and_family(
    name: str, family: str | None, instructions: str | None, backend: str | None
) -> None:
    assert (instructions_of(name, family), backend_of(name)) == (instructions, backend)


# --- the outputs -----------------------------------------------------------------------------


def test_next_json_and_csv_carry_the_advice(tmp_path: Path) -> None:
    cards: CardFile = load_card_file(DIFF / "w480_gpu0.json")
    report = next_moves(cards, "w480")
    rows = list(csv.DictReader(io.StringIO(next_csv(report))))
    assert [r["try_kinds"] for r in rows] == [
        "; ".join(a.kind for a in m.advice) for m in report.moves
    ]
    conv = next(r for r in rows if r["group"].startswith("vae:conv3d:in1x96x6x482x210_w96x96"))
    assert conv["try_kinds"] == "layout; dtype"
    out = tmp_path / "n.json"
    assert run(["next", str(DIFF / "w480_gpu0.json"), "-o", str(out)]) == 0
    moves = json.loads(out.read_text())["moves"]
    assert all(m["try_next"] == "; ".join(a["text"] for a in m["advice"]) for m in moves)
    assert {a["kind"] for m in moves for a in m["advice"]} >= {
        "layout",
        "dtype",
        "attention_backend",
    }


def test_the_page_says_why_on_the_try_cell() -> None:
    from ncu_classify.present.page import page_html

    page = page_html([("w480", load_card_file(DIFF / "w480_gpu0.json"))], "t")
    assert (
        '<td title="layout: 3 nchwToNhwc/nhwcToNchw kernels on the card: 224.2 us per call,'
        " memory_format contiguous; dtype: dtype fp32, it runs TF32 (hgmma_tf32): kernel"
        " sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize256x32x32"
    ) in page


def test_a_compute_bound_conv_with_busy_l2_is_told_its_padding(derived_cards: Path) -> None:
    """Its class (compute_bound) and binding roof (compute) outrank L2 at 65 %: the padding
    costs tensor-pipe time, so the tile idea stays; a memory class alone drops it."""
    group = "vae:conv3d:in1x192x6x242x418_w192x192x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    card = _card(derived_path(WAN, derived_cards), group)
    facts = card_facts(card)
    assert facts.l2_pct is not None and facts.l2_pct > 60 and facts.roof == "compute"
    assert [a.kind for a in advise(card)] == ["layout", "dtype", "tile_padding"]
    assert advise(card)[2].text == "useful FLOPs are 75 % of those executed: a tile that pads less"
    l2_bound = card.model_copy(update={"primary": "l2_bandwidth_bound"})
    assert [a.kind for a in advise(l2_bound)] == ["layout", "dtype"]
