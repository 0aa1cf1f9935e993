"""What to try for a card, as typed advice that follows the kernel's own facts (`advice_facts`):
each idea has a stable kind, its sentence, and why, in the card's terms (the figures, classes
and kernel names that justify it). The catalog is small pure functions, most specific first;
each proposes its move only when the facts allow it, and never what the kernel already is: no
wgmma kernel or FlashAttention-3 for a wgmma kernel, no cuDNN for a cuDNN kernel, no
channels-last for a channels-last op, no TF32 for a kernel that runs TF32. A grid that leaves
SMs idle gets more CTAs (split the reduction, batch), not "fuse: the bytes move once", which is
said only of a kernel bound by its bytes. When no idea applies, the card's counter-experiment
(its settled class's, else its first verdict's) is the advice, less any clause that proposes
what the kernel already is."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..cards.model import Card
from .advice_facts import KernelFacts, card_facts, channels_last, launch_sized, memory_bound

AdviceKind = Literal[
    "layout", "dtype", "attention_backend", "gemm_kernel", "tile_padding", "tile_count",
    "more_ctas", "fuse", "compile", "at_roof", "counter_experiment",
]  # fmt: skip
USEFUL_BELOW = 0.9  # useful / executed FLOPs under this: the tile pads enough to matter
AT_ROOF_PCT = 70.0  # a wgmma kernel at this share of its roof leaves little to the kernel
MMA_SYNC = "this mma.sync kernel tops out at 2/3 of the wgmma peak"


class Advice(BaseModel):
    """One thing to try, with why the card's facts support it."""

    model_config = ConfigDict(extra="forbid")
    kind: AdviceKind = Field(
        description="layout, dtype, attention_backend, gemm_kernel, tile_padding, tile_count,"
        " more_ctas, fuse, compile, at_roof (no kernel move: the kernel is near its roof),"
        " counter_experiment (the card's own, when no other idea applies)"
    )
    text: str = Field(description="the sentence `try_next` joins")
    why: list[str] = Field(description="the card's facts that justify it")


def short(kernel: str | None) -> str:
    """A kernel name without its return type and template arguments."""
    name = re.sub(r"^void\s+", "", kernel or "?").replace("<unnamed>::", "")
    return re.split(r"[<(]", name, maxsplit=1)[0] or name


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1f} %"


def _grid(f: KernelFacts) -> str:
    if f.grid is None or not f.sm_count:
        return "fewer CTAs than one wave fills (grid_under_one_wave)"
    return f"{f.grid} CTAs on {f.sm_count} SMs"


def _is(f: KernelFacts) -> str:
    """What the kernel is, as the card names it."""
    what = [w for w in (f.backend, f.instructions, f.family) if w]
    return f"kernel {short(f.kernel)}" + (f" ({', '.join(what)})" if what else "")


def layout(f: KernelFacts) -> Advice | None:
    """Channels-last for a conv whose layout transposes the card lists."""
    if not f.transposes or f.conv is None or channels_last(f):
        return None
    spent = (
        "their time unknown" if f.transposes_us is None else f"{f.transposes_us:.1f} us per call"
    )
    fmt = "channels_last" if f.conv == "conv2d" else "channels_last_3d"
    return Advice(
        kind="layout",
        text=f"{fmt}: drops {f.transposes} layout transposes ({spent})",
        why=[
            f"{f.transposes} nchwToNhwc/nhwcToNchw kernels on the card: {spent}",
            f"memory_format {f.memory_format or 'contiguous'}",
        ],
    )


def dtype(f: KernelFacts) -> Advice | None:
    """fp32 to the tensor pipe (TF32 or bf16), TF32 to bf16; an fp32 op bound by its bytes
    to bf16 with its stage."""
    if f.dtype != "fp32":
        return None
    tf32 = (f.family or "").endswith("tf32") or "tf32" in (f.kernel or "").lower()
    if f.matmul and (tf32 or (f.allow_tf32 and f.instructions != "fp32 pipe")):
        runs = f"it runs TF32 ({f.family})" if tf32 else "allow_tf32 is on"
        why = ["dtype fp32", f"{runs}: {_is(f)}"]
        return Advice(
            kind="dtype", text="bf16 instead of TF32 (wgmma bf16 peak is 2x TF32's)", why=why
        )
    if f.matmul:
        return Advice(
            kind="dtype",
            text="TF32 or bf16: in fp32 it runs on the FP32 pipe, not the tensor pipe",
            why=["dtype fp32, TF32 off", _is(f)],
        )
    if memory_bound(f) and not launch_sized(f):
        return Advice(
            kind="dtype",
            text="bf16 with its stage: this fp32 op is bound by its bytes, bf16 halves them",
            why=["dtype fp32", f"dram_pct {_pct(f.dram_pct)}, l2_pct {_pct(f.l2_pct)}"],
        )
    return None


def mma_sync(f: KernelFacts) -> Advice | None:
    """A wgmma kernel (or attention backend) for a 16-bit mma.sync kernel."""
    if f.instructions != "mma.sync" or f.dtype == "fp32" or not f.matmul:
        return None
    mma, wgmma = f.peaks
    peaks = (
        f"peaks per cycle: mma.sync {mma:,.0f} FLOP, wgmma {wgmma:,.0f}"
        if mma and wgmma
        else "Hopper's mma.sync peak is 2/3 of its wgmma peak"
    )
    why = [_is(f), peaks]
    if not f.attention:
        return Advice(kind="gemm_kernel", text=f"a wgmma kernel: {MMA_SYNC}", why=why)
    others = [
        name
        for name, backend in (("FlashAttention-3", "flash_attention_3"), ("cuDNN SDPA", "cudnn"))
        if f.backend != backend
    ]
    return Advice(kind="attention_backend", text=f"{' or '.join(others)}: {MMA_SYNC}", why=why)


def tile_padding(f: KernelFacts) -> Advice | None:
    """A tile that pads less, where padding is a fair share of the FLOPs and FLOPs are what
    the kernel spends its time on (a kernel bound by its bytes pays nothing for padding)."""
    useful = f.useful_over_executed
    if useful is None or useful >= USEFUL_BELOW or memory_bound(f):
        return None
    return Advice(
        kind="tile_padding",
        text=f"useful FLOPs are {100 * useful:.0f} % of those executed: a tile that pads less",
        why=[f"useful_over_executed {useful:.3f}", _is(f)],
    )


def tile_count(f: KernelFacts) -> Advice | None:
    """Another tile size or stream-K where the verdict note counts the output tiles."""
    if f.tile_note is None:
        return None
    return Advice(
        kind="tile_count", text=f"another tile size or stream-K ({f.tile_note})", why=[f.tile_note]
    )


def more_ctas(f: KernelFacts) -> Advice | None:
    """More CTAs for a grid that leaves SMs idle and runs long enough for it to matter."""
    if not f.under_one_wave or launch_sized(f) or memory_bound(f) or f.tile_note:
        return None
    if f.matmul:
        text = "more CTAs: split-K or a smaller tile"
    elif f.reduction:
        text = (
            "more CTAs: split the reduction over more CTAs (torch.compile: Inductor splits it)"
            " or batch"
        )
    else:  # an elementwise op this small is too little work for a kernel of its own: fuse()
        return None
    why = [f"grid: {_grid(f)}", f"dram_pct {_pct(f.dram_pct)}", _is(f)]
    return Advice(kind="more_ctas", text=f"{text}: {_grid(f)}", why=why + _classes(f))


def fuse(f: KernelFacts) -> Advice | None:
    """Fusion (torch.compile) for an elementwise or reduction op, for the reason its facts
    give: launch time, bytes that move twice, or eager indexing that keeps the SMs issuing."""
    if f.matmul or not (f.elementwise or f.reduction) or more_ctas(f):
        return None
    grid = f"grid {f.grid}" if f.grid is not None else "grid unknown"
    if launch_sized(f):
        return Advice(
            kind="fuse",
            text="fuse it with its neighbours (torch.compile) or a CUDA graph:"
            f" {f.dur_us:.1f} us is mostly launch",
            why=[f"dur_us {f.dur_us:.2f}, {grid}", _is(f)],
        )
    if f.under_one_wave:
        return Advice(
            kind="fuse",
            text=f"fuse it with its neighbours (torch.compile): {_grid(f)} is too little work"
            " for a kernel of its own",
            why=[f"grid: {_grid(f)}", f"dur_us {f.dur_us}", _is(f)],
        )
    if memory_bound(f):
        return Advice(
            kind="fuse",
            text="fuse it with its producer or consumer (torch.compile): the bytes move once",
            why=[f"dram_pct {_pct(f.dram_pct)}, l2_pct {_pct(f.l2_pct)}", *_classes(f)],
        )
    issue = f.issue_pct is not None and f.issue_pct >= 50.0
    reason = f"instruction issue {_pct(f.issue_pct)}" if issue else f"dram_pct {_pct(f.dram_pct)}"
    return Advice(
        kind="compile",
        text=f"torch.compile: a generated kernel for this op and its neighbours (eager: {reason})",
        why=[reason, _is(f), *_classes(f)],
    )


def at_roof(f: KernelFacts) -> Advice | None:
    """No kernel move for a wgmma kernel near its roof whose FLOPs are nearly all useful."""
    useful = f.useful_over_executed
    if f.instructions != "wgmma" or f.pct_of_roof is None or f.pct_of_roof < AT_ROOF_PCT:
        return None
    if useful is not None and useful < USEFUL_BELOW:
        return None
    roof = f" {f.roof}" if f.roof else ""
    return Advice(
        kind="at_roof",
        text=f"no kernel move: it is wgmma already, at {f.pct_of_roof:.0f} % of its{roof} roof;"
        " what is left is fewer FLOPs or bytes (the shape, the calls)",
        why=[_is(f), f"pct_of_roof {f.pct_of_roof:.1f}"]
        + ([] if useful is None else [f"useful_over_executed {useful:.3f}"]),
    )


def _classes(f: KernelFacts) -> list[str]:
    return [f"class {c}" for c in dict.fromkeys(f.classes)][:2]


CATALOG: tuple[Callable[[KernelFacts], Advice | None], ...] = (
    layout, dtype, mma_sync, tile_padding, tile_count, more_ctas, fuse,
)  # fmt: skip


def advise(card: Card) -> list[Advice]:
    """What to try for a card, most specific first; else a kernel at its roof says so; else
    the card's counter-experiment, less what the kernel already is."""
    facts = card_facts(card)
    ideas = [idea for rule in CATALOG if (idea := rule(facts)) is not None]
    if ideas:
        return ideas
    if (done := at_roof(facts)) is not None:
        return [done]
    settled = card.settled
    experiment = settled.counter_experiment if settled else card.counter_experiment
    text = " ".join((experiment or "").split())
    kept = trim(text, facts) if text else ""
    source = f"class {settled.primary} (settled)" if settled else f"class {card.primary}"
    if text and not kept:
        kept = (
            "no move from the card's facts: its counter-experiment proposes what the kernel"
            " already is"
        )
    return [
        Advice(
            kind="counter_experiment",
            text=kept or "no counter-experiment on the card",
            why=[source, _is(facts)] if card.primary else [_is(facts)],
        )
    ]


def try_next(card: Card) -> str:
    """The advice as one line: its sentences joined."""
    return "; ".join(a.text for a in advise(card))


_CLAUSE = re.compile(r"; |, or ")


def _clauses(text: str) -> list[tuple[str, str]]:
    """(separator before it, clause) at the top level of `text` (not inside parentheses)."""
    out, depth, start, sep, i = [], 0, 0, "", 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        match = _CLAUSE.match(text, i) if depth == 0 else None
        if match:
            out.append((sep, text[start:i]))
            sep, start, i = match.group(), match.end(), match.end()
            continue
        i += 1
    out.append((sep, text[start:]))
    return out


def already(f: KernelFacts) -> list[re.Pattern[str]]:
    """Patterns of advice that would propose what the kernel already is."""
    found = []
    if f.instructions == "wgmma":
        found.append(r"wgmma kernel|FlashAttention-3|kernel for this architecture|Hopper kernel")
    if f.backend == "cudnn":
        found.append(r"cuDNN")
    if f.backend == "flash_attention_3":
        found.append(r"FlashAttention-3")
    if channels_last(f):
        found.append(r"channels_last")
    if f.dtype in ("bf16", "fp16"):
        found.append(r"\bTF32\b|\bbf16\b")
    if (f.family or "").endswith("tf32"):
        found.append(r"TF32 or bf16")
    return [re.compile(p) for p in found]


def trim(text: str, f: KernelFacts) -> str:
    """`text` less its clauses that propose what the kernel already is (first letter kept a
    capital)."""
    banned = already(f)
    kept = [(s, c) for s, c in _clauses(text) if not any(p.search(c) for p in banned)]
    if not kept:
        return ""
    out = kept[0][1] + "".join(sep + clause for sep, clause in kept[1:])
    return out[:1].upper() + out[1:]
