"""The alternatives `try` replays for one card: the same op changed one way (a layout, a dtype,
an attention backend, an output padded to whole tiles, Inductor), each proposed only when the
card's own facts allow it and never what the kernel already is, each with why in the card's
terms. An alternative is a shape of the shapes-file grammar, so capture replays it as it
replays the original."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter

from ..cards.model import Card
from ..cards.rollup import dominant
from ..shapes.aten import AtenShape
from ..shapes.attention import AttentionShape
from ..shapes.file import Shape
from ..shapes.ops import CastShape, Conv2dShape, Conv3dShape, LinearShape

MoveKind = Literal[
    "baseline", "layout", "dtype", "attention_backend", "tile_padding", "compile", "fuse", "fold"
]
TRANSPOSES = ("nchwToNhwc", "nhwcToNchw")
# What an attention kernel's name says it is, by SDPA backend (the names PyTorch's kernels carry)
ATTENTION_KERNELS = {
    "sdpa_cudnn": ("cudnn",),
    "sdpa_flash": ("flash_fwd", "pytorch_flash"),
    "sdpa_efficient": ("fmha_cutlass", "MemEffAttention", "efficient_attention"),
}
OUTSIDE_TORCH = ("fa3_fwd", "flash_attn_interface")  # FlashAttention-3 wheels, when importable
HEAVY_ATEN = ("conv", "mm", "bmm", "addmm", "linear", "attention", "matmul")
TILE = 128  # rows of the largest common wgmma output tile edge on sm90 (nvjet, CUTLASS)
RECORDED_ONLY = ("real_us", "real_kernels", "real_kernel_names", "real_calls", "inputs_file",
                 "name")  # fmt: skip


class Alternative(BaseModel):
    """One way to run a card's op: the shape replayed, its label and why it should help."""

    model_config = ConfigDict(extra="forbid")
    label: str  # part of the tries shape's name: [A-Za-z0-9_]
    kind: MoveKind
    why: str
    shape: Shape


def alternatives(card: Card, shape: Shape) -> list[Alternative]:
    """The original as recorded (the baseline, timed again in the same run), then every
    alternative the card's facts allow."""
    ideas: list[Alternative] = [_variant(shape, "as_recorded", "baseline", "the op as recorded")]
    if isinstance(shape, (Conv3dShape, Conv2dShape)):
        ideas += _conv_moves(card, shape)
    elif isinstance(shape, LinearShape):
        ideas += _dtype_moves(card, shape) + _padding_moves(card, shape)
    elif isinstance(shape, AttentionShape):
        ideas += _attention_moves(card, shape) + _dtype_moves(card, shape)
    elif isinstance(shape, CastShape) or (
        isinstance(shape, AtenShape) and not any(h in shape.overload for h in HEAVY_ATEN)
    ):
        ideas.append(_compile_move(card, shape))
    return ideas


def nothing_to_try(card: Card, shape: Shape) -> str:
    """Why the catalog proposes nothing for a card, in its terms."""
    top = dominant(card.kernels)
    family = top.roofline.family if top is not None and top.roofline else None
    facts = [f"{shape.op}", *([f"dtype {d}"] if (d := getattr(shape, "dtype", None)) else [])]
    facts += [f"layout {m}"] if (m := getattr(shape, "memory_format", None)) else []
    facts += [f"its kernel runs {family}"] if family else []
    if isinstance(shape, AtenShape):
        return f"{', '.join(facts)}: a GEMM, conv or attention device op; record it typed to try it"
    return f"{', '.join(facts)}: no alternative in the catalog applies"


def _variant(shape: Shape, label: str, kind: MoveKind, why: str, **change: Any) -> Alternative:
    """The shape with `change` applied, validated as a shapes file would be; the recording's
    own figures and inputs are left out (every alternative draws the same seeded inputs)."""
    fields = {k: v for k, v in shape.written().items() if k not in RECORDED_ONLY}
    if {"memory_format", "M", "N", "K"} & set(change):  # channels-last or padded tensors:
        fields.pop("layout", None)  # not the program's views any more
    mask = fields.get("mask")
    if "dtype" in change and isinstance(mask, dict) and mask["dtype"] != "bool":
        fields["mask"] = {**mask, "dtype": change["dtype"]}  # an additive mask follows
    changed = _SHAPE.validate_python({**fields, **change}, strict=False)
    return Alternative(label=label, kind=kind, why=why, shape=changed)


_SHAPE: TypeAdapter[Shape] = TypeAdapter(Shape)


def _transposes(card: Card) -> tuple[int, float | None]:
    """How many layout-transpose kernels the card ran, and their time per call (us)."""
    found = [k for k in card.kernels if any(t in k.kernel for t in TRANSPOSES)]
    times = [k.metrics.get("dur_us") for k in found]
    spent = None if any(t is None for t in times) else round(sum(t or 0.0 for t in times), 1)
    return len(found), spent


def _conv_moves(card: Card, shape: Conv3dShape | Conv2dShape) -> list[Alternative]:
    """channels-last when the conv pays layout transposes; bf16 (and TF32) when it is fp32;
    both together, as a program that makes both changes runs it."""
    layout = "channels_last_3d" if isinstance(shape, Conv3dShape) else "channels_last"
    moves: list[Alternative] = []
    count, spent = _transposes(card)
    if shape.memory_format == "contiguous" and count:
        time = f"{spent} us per call" if spent is not None else "their time unknown"
        why = f"its kernels include {count} NCHW<->NHWC transposes ({time}) around cuDNN's"
        moves.append(_variant(shape, layout, "layout", why + " NHWC kernel", memory_format=layout))
    dtype = _dtype_moves(card, shape)
    moves += dtype
    if moves and dtype and shape.memory_format == "contiguous" and count:
        why = "both: the layout transposes go and the tensor pipe runs bf16"
        moves.append(
            _variant(shape, f"bf16_{layout}", "dtype", why, dtype="bf16", memory_format=layout)
        )
    return moves


def _dtype_moves(card: Card, shape: Shape) -> list[Alternative]:
    """An fp32 op: TF32 (if not allowed yet) and bf16; the numerics comparison says what each
    costs in accuracy."""
    if getattr(shape, "dtype", None) != "fp32":
        return []
    family = _family(card)
    moves = []
    if isinstance(shape, (LinearShape, Conv3dShape, Conv2dShape)) and not shape.allow_tf32:
        why = f"fp32 without TF32 runs on the FP32 pipe{family}: TF32 uses the tensor pipe"
        moves.append(_variant(shape, "tf32", "dtype", why, allow_tf32=True))
    why = f"fp32{family}: bf16 halves the bytes and doubles the tensor peak over TF32"
    tf32 = {"allow_tf32": False} if "allow_tf32" in type(shape).model_fields else {}
    moves.append(_variant(shape, "bf16", "dtype", why, dtype="bf16", **tf32))
    return moves


def _family(card: Card) -> str:
    """`(its kernel runs hmma_tf32)` from the dominant kernel's roofline, or nothing."""
    top = dominant(card.kernels)
    family = top.roofline.family if top is not None and top.roofline else None
    return f" (its kernel runs {family})" if family else ""


def _padding_moves(card: Card, shape: LinearShape) -> list[Alternative]:
    """M padded to whole output tiles when the card's useful FLOPs fall short of those
    executed: measures what the partial tiles cost (the padded rows are the same arithmetic)."""
    useful = card.roofline.useful_over_executed if card.roofline else None
    padded = -(-shape.M // TILE) * TILE
    if useful is None or useful >= 0.95 or padded == shape.M:
        return []
    why = (
        f"useful FLOPs are {100 * useful:.0f} % of those executed: M={shape.M} padded to"
        f" {padded} ({TILE}-row tiles) measures what the partial tiles cost"
    )
    return [_variant(shape, f"padded_m{padded}", "tile_padding", why, M=padded)]


def _attention_moves(card: Card, shape: AttentionShape) -> list[Alternative]:
    """Every other SDPA backend, and FlashAttention-3 (listed as failed where not installed);
    never the backend the kernel already is; SDPA's alone for a masked attention (or one with
    dropout or a scale: the other kernels take none here)."""
    names = " ".join(k.kernel for k in card.kernels)
    running = [b for b, tells in ATTENTION_KERNELS.items() if any(t in names for t in tells)]
    moves = []
    extras = (shape.mask, shape.dropout_p, shape.scale, shape.enable_gqa)
    sdpa_only = any(x is not None for x in extras)
    for backend in [*ATTENTION_KERNELS, *([] if sdpa_only else OUTSIDE_TORCH)]:
        if backend in running or backend in shape.backends():
            continue
        now = f"its kernel is {running[0]}'s" if running else "its kernel's backend is unknown"
        why = f"{now}: {backend} is another attention kernel for the same shape"
        moves.append(_variant(shape, backend, "attention_backend", why, backend=backend))
    return moves


def _compile_move(card: Card, shape: AtenShape | CastShape) -> Alternative:
    """Inductor's kernel for the op alone: a generated kernel with its own grid (a reduction
    split over more CTAs, a layout-aware loop), measured rather than assumed."""
    top = dominant(card.kernels)
    grid = top.metrics.get("grid") if top is not None else None
    sms = card.gpu.sm_count
    if grid is not None and sms and grid < sms:
        why = f"its kernel runs {grid:.0f} CTAs on {sms} SMs: Inductor may split the work wider"
    else:
        why = "Inductor generates its own kernel for the op (torch.compile of the op alone)"
    return _variant(shape, "compiled", "compile", why, compile="default")
