"""What a card's own facts say its dominant kernel already is, read once for the advice
(`advice`): the instruction family it runs (wgmma, mma.sync, the FP32 pipe), the library or
backend that wrote it (cuDNN, FlashAttention-2/3, PyTorch's efficient attention, cuBLAS nvjet,
CUTLASS), its dtype and memory format, its launch grid against the SM count, whether it moves
bytes at a roof, and what the card says of padding and tiles. The names are read as Nsight
Compute reports them (`cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_*`,
`pytorch_flash::flash_fwd_kernel`, `flash::FlashAttnFwdSm90`, `fmha_cutlassF_*_sm80`,
`nvjet_sm90_*`, `sm90_xmma_*`, `sm80_xmma_*`, `cutlass_80_tensorop_*`); the roofline's FLOP
family (`hgmma_*` wgmma, `hmma_*` mma.sync, `fp32`), where the card has one, outranks the name."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..cards.model import Card, KernelCard
from ..cards.rollup import dominant

Instructions = Literal["wgmma", "mma.sync", "fp32 pipe"]
TRANSPOSES = ("nchwToNhwc", "nhwcToNchw")
ELEMENTWISE = ("elementwise", "Elementwise", "CatArray", "reduce_kernel", "upsample")
REDUCTIONS = ("reduce_kernel", "Moments", "layer_norm", "group_norm", "batch_norm", "norm_kernel")
ATTENTION_OPS = ("sdpa", "attn", "attention", "flash")
MEMORY_CLASSES = ("dram_bandwidth_bound", "l2_bandwidth_bound")
COMPUTE_CLASSES = ("compute_bound", "tensor_pipe_bound", "fp32_pipe_bound", "issue_bound")
BOUND_PCT = 60.0  # the rules' threshold for a unit at its roof (rules/roofline.yaml)
LAUNCH_SIZED_US = 5.0  # a kernel this short is mostly launch and ramp, not bytes or FLOPs
IDLE_SHARE = 0.75  # a grid of at most this share of the SMs leaves a quarter of them idle
DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


class KernelFacts(BaseModel):
    """A card's facts that advice may rest on, each None where the card does not say."""

    model_config = ConfigDict(frozen=True)
    kernel: str | None
    instructions: Instructions | None
    backend: str | None  # cudnn, flash_attention_2, flash_attention_3, efficient, nvjet, cutlass
    family: str | None  # the roofline FLOP family (hgmma_bf16, hmma_tf32, fp32, ...)
    attention: bool
    matmul: bool  # a GEMM, conv or attention: the op has nominal MAC FLOPs
    dtype: str | None
    allow_tf32: bool
    memory_format: str | None
    conv: str | None  # conv2d or conv3d
    transposes: int
    transposes_us: float | None  # per call; None when one of them is untimed
    grid: int | None
    sm_count: int | None
    under_one_wave: bool  # the grid leaves SMs idle (grid < SMs, or the verdict says so)
    dur_us: float | None
    dram_pct: float | None
    l2_pct: float | None
    issue_pct: float | None
    pct_of_roof: float | None
    peaks: tuple[float | None, float | None]  # mma.sync and wgmma FLOP/cycle of its dtype
    roof: str | None  # the binding roof: compute, dram, l2, l1
    useful_over_executed: float | None
    tile_note: str | None
    classes: tuple[str, ...]  # the card's primary, its settled class, the dominant kernel's
    reduction: bool
    elementwise: bool


def instructions_of(name: str, family: str | None) -> Instructions | None:
    """The instruction family a kernel runs: from the roofline family where there is one,
    else from its name (sm90/wgmma/gmma/nvjet names are Hopper's wgmma, sm80 and the
    FlashAttention-2 kernel mma.sync, ffma the FP32 pipe; the fp32 family only for a GEMM or
    conv kernel)."""
    if family:
        if family.startswith("hgmma"):
            return "wgmma"
        if family.startswith("hmma"):
            return "mma.sync"
    low = name.lower()
    if family == "fp32" and re.search(r"ffma|gemm|fprop|conv", low):
        return "fp32 pipe"  # a GEMM or conv on CUDA cores (an elementwise kernel's FLOPs are not)
    if re.search(r"wgmma|gmma|nvjet_sm90|sm90_xmma|flashattnfwdsm90|enable_sm90", low):
        return "wgmma"
    if "ffma" in low:
        return "fp32 pipe"
    if re.search(r"flash_fwd_kernel|sm80|cutlass_80|tensorop|fmha_cutlass|s1688", low):
        return "mma.sync"
    return None


def backend_of(name: str) -> str | None:
    """The library or backend that wrote the kernel, from its name."""
    low = name.lower()
    if "cudnn" in low:
        return "cudnn"
    if "flashattnfwdsm90" in low or ("flash::" in low and "sm90" in low):
        return "flash_attention_3"
    if "flash_fwd" in low or "pytorch_flash" in low:
        return "flash_attention_2"
    if "fmha_cutlass" in low or "memeffattention" in low:
        return "efficient"
    if low.startswith("nvjet"):
        return "nvjet"
    if "cutlass" in low:
        return "cutlass"
    return None


def dtype_of(card: Card) -> str | None:
    """The op's dtype: the shape's own, else its first tensor argument's (recorded aten ops)."""
    params = card.shape_parameters
    if isinstance(params.get("dtype"), str):
        return str(params["dtype"])
    return _first_dtype(params.get("args") or [])


def _first_dtype(args: object) -> str | None:
    """The dtype of the first tensor among recorded arguments (a list of tensors too: cat)."""
    if isinstance(args, list):
        return next((d for d in map(_first_dtype, args) if d is not None), None)
    tensor = args.get("tensor") if isinstance(args, dict) else None
    if isinstance(tensor, dict) and isinstance(tensor.get("dtype"), str):
        return DTYPES.get(tensor["dtype"], tensor["dtype"])
    return None


def _metric(kernel: KernelCard | None, name: str) -> float | None:
    value = kernel.metrics.get(name) if kernel is not None else None
    return None if value is None else float(value)


def _transposes(card: Card) -> tuple[int, float | None]:
    """The card's layout-transpose kernels and their time per call (None: one is untimed)."""
    found = [k for k in card.kernels if any(t in k.kernel for t in TRANSPOSES)]
    times = [k.metrics.get("dur_us") for k in found]
    spent = None if any(t is None for t in times) else sum(t or 0.0 for t in times)
    return len(found), spent


def card_facts(card: Card) -> KernelFacts:
    """The facts of a card's dominant kernel (and of the card around it) that advice reads."""
    top = dominant(card.kernels)
    name = top.kernel if top is not None else ""
    family = top.roofline.family if top is not None and top.roofline else None
    params = card.shape_parameters
    grid, sm_count = _metric(top, "grid"), card.gpu.sm_count
    classes = tuple(
        c
        for c in (
            card.primary,
            card.settled.primary if card.settled else None,
            top.classification if top is not None else None,
        )
        if c
    )
    fewer = grid is not None and bool(sm_count) and grid <= IDLE_SHARE * (sm_count or 0)
    count, spent = _transposes(card)
    conv = next((c for c in ("conv3d", "conv2d") if c in card.op), None)
    kind = dtype_of(card) if dtype_of(card) in ("bf16", "fp16") else "bf16"
    return KernelFacts(
        kernel=name or None,
        instructions=instructions_of(name, family) if name else None,
        backend=backend_of(name) if name else None,
        family=family,
        attention=any(a in card.op.lower() for a in ATTENTION_OPS),
        matmul=bool(card.nominal_mac_flops) or conv is not None or "linear" in card.op,
        dtype=dtype_of(card),
        allow_tf32=bool(params.get("allow_tf32")),
        memory_format=params.get("memory_format"),
        conv=conv,
        transposes=count,
        transposes_us=spent,
        grid=None if grid is None else int(grid),
        sm_count=sm_count,
        under_one_wave=fewer or (grid is None and "grid_under_one_wave" in classes),
        dur_us=_metric(top, "dur_us"),
        dram_pct=_metric(top, "dram_pct"),
        l2_pct=_metric(top, "l2_pct"),
        issue_pct=_metric(top, "issue_pct"),
        pct_of_roof=top.roofline.pct_of_roof if top is not None and top.roofline else None,
        peaks=(_metric(top, f"peak_hmma_{kind}"), _metric(top, f"peak_hgmma_{kind}")),
        roof=top.roofline.binding if top is not None and top.roofline else None,
        useful_over_executed=card.roofline.useful_over_executed if card.roofline else None,
        tile_note=_tile_note(top),
        classes=classes,
        reduction=any(r in name for r in REDUCTIONS) or "norm" in card.op,
        elementwise=any(e in name for e in ELEMENTWISE),
    )


def _tile_note(top: KernelCard | None) -> str | None:
    """The verdict note's output-tile count, where the note gives one."""
    note = top.verdict_note if top is not None else None
    return note.split(": ", 1)[-1] if note and "output tiles" in note else None


def memory_bound(facts: KernelFacts) -> bool:
    """The kernel moves its bytes at a memory roof: its class says so; else, unless its class
    or its binding roof is compute, DRAM or L2 throughput is at the rules' threshold."""
    if set(facts.classes) & set(MEMORY_CLASSES):
        return True
    if set(facts.classes) & set(COMPUTE_CLASSES) or facts.roof == "compute":
        return False
    return any(p is not None and p >= BOUND_PCT for p in (facts.dram_pct, facts.l2_pct))


def launch_sized(facts: KernelFacts) -> bool:
    """The kernel is so short that launch and ramp are most of its time."""
    return facts.dur_us is not None and facts.dur_us < LAUNCH_SIZED_US


def channels_last(facts: KernelFacts) -> bool:
    """The op already runs channels-last."""
    return facts.memory_format in ("channels_last", "channels_last_3d")
