"""A stage's measured total, each saving counted once. A per-op move and a chain of the same run
can hold the same op: the cast compiled alone saves its time, and the chain that fuses that
cast saves it again. A per-op winner's saving is counted for the calls of its op outside every
winning chain or fold of the run (its saving scaled by that share); the rest is the chain's.
A fold's saving is counted for the calls of its pad outside the winning fusion chains."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..shapes.aten import SHORT_DTYPE, AtenShape
from ..shapes.chain_shape import ChainShape
from ..shapes.chains import Chain, ChainOp
from ..shapes.ops import CastShape

if TYPE_CHECKING:
    from ..shapes.file import ShapesFile


class _Tried(Protocol):
    """A try, by its shape's group id."""

    group: str


class TriedMove(Protocol):
    """What this reads of a tried move (`results.TriedMove`)."""

    @property
    def stage(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def calls(self) -> int: ...
    @property
    def winner(self) -> str | None: ...
    @property
    def measured_saving_us(self) -> float | None: ...
    @property
    def original(self) -> _Tried: ...


OpKey = str | tuple[str, str, tuple[int, ...], str, str]  # an aten group id, or a cast's facts
CASTS = ("aten._to_copy.default", "aten.to.dtype")
HEAVY_IN_FOLDS = ("aten.convolution.default",)
PAD = "aten.constant_pad_nd.default"


def counted_once(
    moves: Sequence[TriedMove], shapes: ShapesFile
) -> tuple[dict[str, float], dict[str, float]]:
    """Per stage, the winners' savings with each op's saving counted once; and the savings
    taken out because a winning chain or fold of the run already holds them (stages with
    some). A fold is counted like a per-op move of its pad: a fused chain that ends in the pad
    writes the padded tensor in its own kernel, the copy the fold removes is gone already."""
    entries = {e.group: e.shape for e in shapes.entries()}
    fused: dict[OpKey, int] = {}  # calls of each op inside the run's winning fusion chains
    folded: dict[OpKey, int] = {}  # ... inside its winning folds (their pads)
    for move in moves:
        shape = entries.get(move.original.group)
        if move.winner and isinstance(shape, ChainShape):
            into = folded if move.op == "fold" else fused
            for op in shape.chain.ops:
                if op.overload in HEAVY_IN_FOLDS:  # a fold's conv: its own moves save apart
                    continue
                key = _chain_op_key(shape.chain, op, move.stage)
                if key is not None:
                    into[key] = into.get(key, 0) + shape.chain.calls
    savings: dict[str, float] = {}
    overlap: dict[str, float] = {}
    for move in moves:
        saving = move.measured_saving_us or 0.0
        shape = entries.get(move.original.group)
        key = _fold_key(move, shape) if move.op == "fold" else _move_key(move, shape)
        inside = 0
        if key is not None:
            held = fused.get(key, 0) + (folded.get(key, 0) if move.op != "fold" else 0)
            inside = min(held, move.calls)
        # scaled only where some calls are inside (x * 3 / 3 is not always x: no -0.0 overlap)
        counted = saving * (move.calls - inside) / move.calls if inside else saving
        if saving - counted:
            overlap[move.stage] = round(overlap.get(move.stage, 0.0) + saving - counted, 3)
        savings[move.stage] = round(savings.get(move.stage, 0.0) + counted, 3)
    return savings, overlap


def _fold_key(move: TriedMove, shape: object) -> OpKey | None:
    """A fold's pad as a chain op is known (its as-recorded chain's `constant_pad_nd`)."""
    if not isinstance(shape, ChainShape):
        return None
    pads = [op for op in shape.chain.ops if op.overload == PAD]
    return _chain_op_key(shape.chain, pads[0], move.stage) if pads else None


def _move_key(move: TriedMove, shape: object) -> OpKey | None:
    """What a per-op move's op is called inside a chain: its aten group id, or a cast's facts
    (its stage's: a cast of the same dims in another stage is another op)."""
    if isinstance(shape, AtenShape):
        return move.group
    if isinstance(shape, CastShape):
        return ("cast", move.stage, tuple(shape.shape), str(shape.from_), str(shape.to))
    return None


def _chain_op_key(chain: Chain, op: ChainOp, stage: str) -> OpKey | None:
    """A chain op's identity as a per-op move knows it: the aten shape it stands for, or for a
    cast its stage, dims and dtypes (typed casts are no aten shapes of the stage)."""
    if op.shape is not None:
        return op.shape if op.shape.startswith(f"{stage}:") else f"{stage}:{op.shape}"
    target = op.kwargs.get("dtype")
    if op.overload not in CASTS or not isinstance(target, str) or not op.outputs or not op.args:
        return None
    source = op.args[0]
    if isinstance(source, dict) and "input" in source:
        read = chain.inputs[source["input"]].tensor
    elif isinstance(source, dict) and "ref" in source:
        read = chain.ops[source["ref"][0]].outputs[source["ref"][1]]
    else:
        return None
    made = op.outputs[0]
    if read.dtype not in SHORT_DTYPE or target not in SHORT_DTYPE:
        return None
    return ("cast", stage, tuple(made.shape), SHORT_DTYPE[read.dtype], SHORT_DTYPE[target])
