"""The two chains a pad fold replays (`try --folds`): the pad and the conv as recorded (the
conv's padding 0 on the padded tensor), and the conv with its own padding on the unpadded
input after a one-sided pad for what is asymmetric, if anything is; both of the same inputs
(the pad's input, the conv's weight and bias), so that capture draws the same seeded tensors
for both. Each op carries its output's layout (dense, in the conv's memory format)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..shapes.aten import SHORT_DTYPE, TensorSpec
from ..shapes.chains import Chain, ChainInput, ChainOp, ChainOutput

PAD = "aten.constant_pad_nd.default"
CONVOLUTION = "aten.convolution.default"


@dataclass(frozen=True)
class Conv:
    """What a fold needs of the conv a pad feeds, typed (conv2d/conv3d) or a device op."""

    group: str
    weight: TensorSpec
    bias: TensorSpec | None
    stride: list[int]
    dilation: list[int]
    groups: int
    channels_last: bool
    allow_tf32: bool | None
    us: float | None  # per call, as recorded


@dataclass
class Fold:
    """One pad tied to the convs it feeds, with the calls of each (summed over its chains)."""

    stage: str
    key: str  # the stage's shape of the pad, else `chain name:opN`
    shape: str | None  # the stage's shape of the pad (what its card is)
    source: TensorSpec  # what the pad reads
    padded: TensorSpec  # what it writes (the conv's input)
    pads: list[int]
    calls: int = 0
    convs: dict[str, tuple[Conv, int]] = field(default_factory=dict)  # group: (conv, calls)


def split_pads(pads: list[int], spatial: int) -> tuple[list[int], list[int]]:
    """The conv's padding per spatial dim (outermost first: what folds, the smaller side of
    each) and the pad left (F.pad's order, last dim first): the one-sided remainder."""
    pairs = [(pads[2 * i], pads[2 * i + 1]) if 2 * i < len(pads) else (0, 0)
             for i in range(spatial)]  # fmt: skip
    folded = [min(lo, hi) for lo, hi in pairs]
    rest = [side - f for (lo, hi), f in zip(pairs, folded, strict=True) for side in (lo, hi)]
    return folded[::-1], rest


def dense_spec(shape: list[int], dtype: str, channels_last: bool) -> TensorSpec:
    """A dense tensor of `shape`: row-major, or channels-last (NHWC, NDHWC)."""
    order = list(range(len(shape)))
    if channels_last and len(shape) in (4, 5):
        order = [0, *range(2, len(shape)), 1]  # outermost to innermost
    strides = [0] * len(shape)
    step = 1
    for dim in reversed(order):
        strides[dim] = step
        step *= shape[dim]
    return TensorSpec.model_validate({"shape": shape, "dtype": dtype, "strides": strides})


def is_channels_last(spec: TensorSpec) -> bool:
    """A 4-D or 5-D tensor whose channels are innermost (NHWC, NDHWC)."""
    return len(spec.shape) in (4, 5) and spec.strides[1] == 1 and spec.shape[1] > 1


def fold_chains(fold: Fold, conv: Conv) -> tuple[Chain, Chain, list[int], list[int]]:
    """The pad and conv as recorded, and the conv with its own padding (after the one-sided
    pad left, if any): two chains of the same inputs (the pad's input, weight, bias)."""
    spatial = len(fold.padded.shape) - 2
    folded, rest = split_pads(fold.pads, spatial)
    inputs = [ChainInput(tensor=fold.source, origins=[fold.key])]
    inputs += [ChainInput(tensor=t, origins=["parameter"]) for t in (conv.weight, conv.bias) if t]
    bias = {"input": 2} if conv.bias else None
    zeros = [0] * spatial

    def convolution(x: object, padding: list[int], into: TensorSpec) -> ChainOp:
        """The conv of `x` (an input of shape `into`) with `padding`, as a chain op."""
        out = _conv_output(into.shape, conv, padding)
        args = [x, {"input": 1}, bias, conv.stride, padding, conv.dilation, False, zeros,
                conv.groups]  # fmt: skip
        return ChainOp(overload=CONVOLUTION, args=args, outputs=[out], shape=conv.group)

    def pad(pads: list[int], out: TensorSpec, shape: str | None = None) -> ChainOp:
        """The pad of the chain's first input by `pads` (with zeros), as a chain op."""
        return ChainOp(overload=PAD, args=[{"input": 0}, pads, 0.0], outputs=[out], shape=shape)

    recorded = [pad(fold.pads, fold.padded, fold.shape)]
    recorded.append(convolution({"ref": [0, 0]}, zeros, fold.padded))
    if any(rest):
        left = _padded(fold.source, rest)
        own = [pad(rest, left), convolution({"ref": [0, 0]}, folded, left)]
    else:
        own = [convolution({"input": 0}, folded, fold.source)]
    made = [
        Chain(
            name=f"{fold.stage}:fold:{_readable(fold)}", calls=fold.calls, before=[conv.group],
            inputs=inputs, ops=ops, outputs=[ChainOutput(ref=[len(ops) - 1, 0])],
        )
        for ops in (recorded, own)
    ]  # fmt: skip
    return made[0], made[1], folded, rest


def _padded(spec: TensorSpec, pads: list[int]) -> TensorSpec:
    """`spec` after F.pad(pads): the last dims grown, dense in its layout."""
    shape = list(spec.shape)
    for i in range(len(pads) // 2):
        shape[-1 - i] += pads[2 * i] + pads[2 * i + 1]
    return dense_spec(shape, spec.dtype, is_channels_last(spec))


def _conv_output(shape: list[int], conv: Conv, padding: list[int]) -> TensorSpec:
    """The conv's output of an input of `shape` with `padding`, dense in the conv's layout."""
    spatial = [
        (size + 2 * pad - dil * (k - 1) - 1) // st + 1
        for size, k, st, pad, dil in zip(
            shape[2:], conv.weight.shape[2:], conv.stride, padding, conv.dilation, strict=True
        )
    ]  # fmt: skip
    out = [shape[0], conv.weight.shape[0], *spatial]
    return dense_spec(out, conv.weight.dtype, conv.channels_last)


def _readable(fold: Fold) -> str:
    """`constant_pad_nd+convolution:1x96x6x480x832:fp32`: the pad's input dims and dtype."""
    dims = "x".join(map(str, fold.source.shape))
    return f"constant_pad_nd+convolution:{dims}:{SHORT_DTYPE.get(fold.source.dtype, 'other')}"
