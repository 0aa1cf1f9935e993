"""Pad folds (`try --folds N`): a recorded `constant_pad_nd` whose output a conv reads (the
recording's chains tie them: the pad is an output of a chain whose `before` names the conv,
the conv's input is the padded tensor) replayed two ways in one capture, each as a chain of
two ops: as recorded (`fNN.as_recorded`: the pad, then the conv with its padding of 0) and
folded (`fNN.conv_padding`: the conv with its own symmetric padding on the unpadded input, a
smaller pad left only for a one-sided part, none when there is none). Both draw the same seeded
input, weight and bias, and both run with the conv's recorded TF32 setting, so their outputs
agree up to the conv algorithm's rounding. A pad that cannot be tied to a conv is passed over
with why."""

from __future__ import annotations

import json

from ..cards.headroom import card_headroom
from ..cards.model import CardFile
from ..shapes.aten import ITEMSIZE, SHORT_DTYPE, AtenShape, TensorSpec
from ..shapes.chain_shape import ChainShape
from ..shapes.chains import Chain, ChainOp, links
from ..shapes.file import ShapeEntry, ShapesFile
from ..shapes.ops import Conv2dShape, Conv3dShape
from .fold_chains import (
    CONVOLUTION,
    PAD,
    Conv,
    Fold,
    dense_spec,
    fold_chains,
    is_channels_last,
    split_pads,
)  # fmt: skip
from .plan_models import NoAlternative, PlannedMove, PlannedTry

LONG_DTYPE = {short: long for long, short in SHORT_DTYPE.items()}
NO_PADS = "nothing to fold: the stage records no constant_pad_nd (its convs pad in their kernels)"
NO_CHAINS = (
    "not folded: the recording keeps no chains (record --chains): no pad can be tied to its conv"
)


def fold_moves(
    shapes: ShapesFile, stages: list[str], count: int, first_rank: int,
    by_stage: dict[str, list[str]], passed: list[NoAlternative], cards: CardFile,
) -> list[PlannedMove]:  # fmt: skip
    """The `count` largest pad folds of `stages` (all when none named), by the pad's time per
    inference, as moves whose two shapes (`fNN.as_recorded`, `fNN.conv_padding`) are appended
    to their stage's lines; every pad that cannot be folded is passed over with why."""
    if count == 0:
        return []
    entries = {entry.group: entry for entry in shapes.entries()}
    timed = {c.group: room.measured_us for c in cards.cards if (room := card_headroom(c))}
    folds, whys = _ties(shapes, stages, entries)
    passed += _passed_over(shapes, stages, entries, folds, whys)

    def pad_us(fold: Fold) -> float | None:
        """The pad's time per call: its card's, else the recording's."""
        recorded = entries[fold.key].shape.real_us if fold.key in entries else None
        return timed.get(fold.key, recorded)

    ranked = sorted(folds.values(), key=lambda f: (-(pad_us(f) or 0.0) * f.calls, -f.calls, f.key))
    moves = []
    for number, fold in enumerate(ranked[:count], start=1):
        conv = max(fold.convs.values(), key=lambda cc: (cc[1], cc[0].group))[0]
        us = (pad_us(fold), timed.get(conv.group, conv.us))
        moves.append(_move(first_rank + number - 1, number, fold, conv, us, timed, by_stage))
    return moves


def _passed_over(
    shapes: ShapesFile, stages: list[str], entries: dict[str, ShapeEntry],
    folds: dict[str, Fold], whys: dict[str, str],
) -> list[NoAlternative]:  # fmt: skip
    """Every pad of `stages` that does not fold, with why: a stage recorded without chains
    once, a pad no chain ties to a conv, a pad that cannot fold into the conv it feeds."""
    pads = [e for e in entries.values() if _is_pad(e) and (not stages or e.stage in stages)]
    padded = dict.fromkeys(e.stage for e in pads)
    passed = [
        NoAlternative(group=f"{stage}:fold", why=NO_PADS)
        for stage in (stages or shapes.stages)
        if stage in shapes.stages and stage not in padded
    ]
    passed += [
        NoAlternative(group=f"{stage}:fold", why=NO_CHAINS)
        for stage in padded
        if not shapes.chains.get(stage)
    ]
    passed += [
        NoAlternative(group=k, why=f"not folded: {w}") for k, w in whys.items() if k not in folds
    ]
    passed += [
        NoAlternative(group=e.group, why="not folded: no chain of the recording ties it to a conv")
        for e in pads
        if shapes.chains.get(e.stage) and e.group not in folds and e.group not in whys
    ]
    return passed


def _is_pad(entry: ShapeEntry) -> bool:
    """A stage's `constant_pad_nd` shape."""
    return isinstance(entry.shape, AtenShape) and entry.shape.overload == PAD


def _ties(
    shapes: ShapesFile, stages: list[str], entries: dict[str, ShapeEntry]
) -> tuple[dict[str, Fold], dict[str, str]]:
    """Every pad of the chains tied to the convs it feeds (calls summed over the chains it is
    in), and why each other pad met cannot be folded."""
    folds: dict[str, Fold] = {}
    whys: dict[str, str] = {}
    for stage, chains in shapes.chains.items():
        if stages and stage not in stages:
            continue
        for chain in chains:
            for number, op in enumerate(chain.ops):
                if op.overload != PAD:
                    continue
                key = op.shape or f"{chain.name}:op{number}"
                if chain.untied:
                    whys.setdefault(key, f"its chain is not tied together: {chain.untied[0]}")
                    continue
                tied = _tie(chain, number, entries)
                if isinstance(tied, str):
                    whys.setdefault(key, tied)
                    continue
                source, pads, convs = tied
                fold = folds.setdefault(
                    key, Fold(stage, key, op.shape, source, op.outputs[0], pads)
                )
                fold.calls += chain.calls
                for conv in convs:
                    had = fold.convs.get(conv.group, (conv, 0))[1]
                    fold.convs[conv.group] = (conv, had + chain.calls)
    return folds, whys


def _tie(
    chain: Chain, number: int, entries: dict[str, ShapeEntry]
) -> tuple[TensorSpec, list[int], list[Conv]] | str:
    """The pad's input, its pads and the convs that read its output; or why it cannot fold."""
    op = chain.ops[number]
    pads = op.args[1] if len(op.args) > 1 else op.kwargs.get("pad")
    value = op.args[2] if len(op.args) > 2 else op.kwargs.get("value", 0.0)
    if not op.args or not isinstance(op.args[0], dict) or not {"input", "ref"} & set(op.args[0]):
        return "its input is no tensor of its chain"
    if not isinstance(pads, list) or not all(isinstance(p, int) for p in pads):
        return f"its pads {pads!r} are not integers"
    if len(pads) % 2:
        return f"its pads {pads} are no (before, after) pairs"
    if value not in (0, 0.0):
        return f"it pads with {value!r}: a conv pads with zeros"
    if any(p < 0 for p in pads):
        return f"it crops (pads {pads})"
    if [number, 0] not in [o.ref for o in chain.outputs]:
        return "its output does not leave its chain"
    later = [n for n, o in enumerate(chain.ops) if n > number and _reads(o, number)]
    if later:
        return f"op {later[0]} of its chain reads its output too: the pad would stay"
    padded = op.outputs[0]
    convs = [c for g in chain.before if (c := _conv(entries.get(g), padded)) is not None]
    if not convs:
        return f"its output ({'x'.join(map(str, padded.shape))}) feeds no conv of padding 0"
    others = [g for g in chain.before if g not in {c.group for c in convs}]
    if others and len(chain.outputs) == 1:  # the pad's output alone leaves: they all read it
        return f"{others[0]} reads its output too: the pad would stay"
    spatial = len(padded.shape) - 2
    if any(pads[2 * spatial :]):
        return f"it pads more than the conv's {spatial} spatial dims (pads {pads})"
    folded, rest = split_pads(pads, spatial)
    if not any(folded) and any(rest):
        return f"its pads {pads} are one-sided: nothing folds into a conv's symmetric padding"
    return _source(chain, op), pads, convs


def _reads(op: ChainOp, number: int) -> bool:
    """Whether `op` reads an output of op `number` of its chain."""
    return any(link.get("ref", [None])[0] == number for link in links([op.args, op.kwargs]))


def _source(chain: Chain, op: ChainOp) -> TensorSpec:
    """The tensor the pad reads: a chain input, or an earlier op's output (or a view of it)."""
    link = op.args[0]
    if "input" in link:
        spec: TensorSpec = chain.inputs[link["input"]].tensor
        return spec
    made = chain.ops[link["ref"][0]].outputs[link["ref"][1]]
    view = link.get("as_strided")
    return TensorSpec.model_validate({**view, "dtype": made.dtype}) if view else made


def _conv(entry: ShapeEntry | None, padded: TensorSpec) -> Conv | None:
    """The conv of `entry` when it reads `padded` (its shape and dtype; a device op's conv:
    its layout too, the tensor as the pad wrote it) with padding 0."""
    shape = entry.shape if entry else None
    if entry is not None and isinstance(shape, (Conv2dShape, Conv3dShape)):
        dtype = LONG_DTYPE[shape.dtype]
        if shape.input != padded.shape or dtype != padded.dtype or any(shape.padding):
            return None
        if shape.layout and "input" in shape.layout:
            return None  # it read another view than the pad's dense output
        last = shape.memory_format != "contiguous"
        weight = dense_spec(shape.weight, dtype, last)
        bias = dense_spec([shape.weight[0]], dtype, False) if shape.bias else None
        return Conv(
            entry.group, weight, bias, shape.stride, shape.dilation, shape.groups, last,
            shape.allow_tf32, shape.real_us,
        )  # fmt: skip
    if entry is None or not isinstance(shape, AtenShape) or shape.overload != CONVOLUTION:
        return None
    args = shape.args
    tensors = [a.get("tensor") if isinstance(a, dict) else None for a in args[:3]]
    if len(args) != 9 or tensors[0] is None or tensors[1] is None:
        return None
    read = TensorSpec.model_validate(tensors[0])
    same = (read.shape, read.dtype, read.strides) == (padded.shape, padded.dtype, padded.strides)
    if not same or args[6] or not isinstance(args[4], list) or any(args[4]):
        return None  # another input (its sizes, dtype or layout), transposed, or padded already
    bias = TensorSpec.model_validate(tensors[2]) if tensors[2] else None
    weight = TensorSpec.model_validate(tensors[1])
    last = is_channels_last(read)
    return Conv(entry.group, weight, bias, args[3], args[5], args[8], last, None, shape.real_us)


def _move(
    rank: int, number: int, fold: Fold, conv: Conv, us: tuple[float | None, float | None],
    timed: dict[str, float], by_stage: dict[str, list[str]],
) -> PlannedMove:  # fmt: skip
    """One fold: the pad and conv as recorded (the baseline) and the conv padding itself."""
    recorded, own, folded, rest = fold_chains(fold, conv)
    read = fold.source.distinct_elements() * ITEMSIZE[fold.source.dtype]
    written = fold.padded.distinct_elements() * ITEMSIZE[fold.padded.dtype]
    others = [g for g in fold.convs if g != conv.group]
    feeds = f"; it also feeds {', '.join(others)}" if others else ""
    left = f", a one-sided pad {rest} left before it" if any(rest) else ", no pad left"
    why = (
        f"the pad copies its whole input ({_size(read)} read, {_size(written)} written),"
        f" {_time(fold.key, us[0], timed)}; the conv pads inside its kernel:"
        f" padding {folded}{left}{feeds}"
    )
    tries = []
    for label, kind, note, chain in (
        ("as_recorded", "baseline", f"the pad {fold.pads}, then the conv, as the program runs"
         " them", recorded),
        ("conv_padding", "fold", why, own),
    ):  # fmt: skip
        name = f"f{number:02d}.{label}"
        shape = ChainShape.model_validate(
            {"op": "chain", "name": name, "calls": fold.calls, "chain": chain,
             **({"allow_tf32": conv.allow_tf32} if conv.allow_tf32 is not None else {})},
        )  # fmt: skip
        by_stage.setdefault(fold.stage, []).append(json.dumps(shape.written()))
        tries.append(PlannedTry(group=f"{fold.stage}:{name}", label=label, kind=kind, why=note))
    return PlannedMove(
        rank=rank, stage=fold.stage, group=f"{fold.stage}:fold:{fold.key.split(':', 1)[-1]}",
        op="fold", calls=fold.calls, measured_us=round((us[0] or 0.0) + (us[1] or 0.0), 3),
        recoverable_at_sol_us=None, tries=tries,
    )  # fmt: skip


def _time(key: str, us: float | None, timed: dict[str, float]) -> str:
    """`869.9 us per call as its card measured` (or as recorded), or that nobody timed it."""
    if us is None:
        return "its time unknown (no card, not timed at record)"
    return f"{us:,.1f} us per call {'as its card measured' if key in timed else 'as recorded'}"


def _size(count: int) -> str:
    """`920.1 MB`, `27.6 kB`: bytes in the decimal unit that reads best."""
    scale = next(((f, u) for f, u in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")) if count >= f), None)
    return f"{count / scale[0]:,.1f} {scale[1]}" if scale else f"{count} B"
