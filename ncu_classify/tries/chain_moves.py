"""Fusion moves: the chains of device ops a recording found (the shapes file's `chains:`),
the largest first by the program's kernel time (else by calls), each replayed as one function
eagerly, as the program runs it, and under `torch.compile`, which fuses it: the measured
saving of a VAE block's add -> norm -> SiLU -> pad around its conv."""

from __future__ import annotations

import json

from ..shapes.chain_shape import ChainShape
from ..shapes.chains import Chain
from ..shapes.file import ShapesFile
from .plan_models import NoAlternative, PlannedMove, PlannedTry


def chain_moves(
    shapes: ShapesFile, stages: list[str], count: int, first_rank: int,
    by_stage: dict[str, list[str]], passed: list[NoAlternative],
) -> list[PlannedMove]:  # fmt: skip
    """The `count` largest tied chains of `stages` (all when none named) as moves, their two
    shapes (`cNN.as_recorded`, `cNN.compiled`) appended to their stage's lines; a chain the
    recording could not tie together, met on the way, is passed over with why."""
    found = [
        (stage, chain)
        for stage, chains in shapes.chains.items()
        if not stages or stage in stages
        for chain in chains
    ]
    found.sort(key=lambda sc: (-(sc[1].real_us or 0.0) * sc[1].calls, -sc[1].calls, sc[1].name))
    moves: list[PlannedMove] = []
    for stage, chain in found:
        if len(moves) == count:
            break
        if chain.untied or not chain.ops:
            why = "; ".join(chain.untied) or "no ops"
            passed.append(NoAlternative(group=chain.name, why=f"not tied together: {why}"))
            continue
        number = len(moves) + 1
        moves.append(_move(first_rank + number - 1, number, stage, chain, by_stage))
    return moves


def _move(
    rank: int, number: int, stage: str, chain: Chain, by_stage: dict[str, list[str]]
) -> PlannedMove:
    """One chain: eager (the baseline) and compiled, under names `cNN.*`."""
    ops = [op.overload.split(".")[1] for op in chain.ops]
    why = (
        f"Inductor fuses its {len(ops)} ops ({'+'.join(ops[:6])}{'...' if len(ops) > 6 else ''})"
        " into fewer kernels: what one op writes the next reads on chip"
    )
    tries = []
    for label, kind, note, compiled in (
        ("as_recorded", "baseline", "the chain as the program runs it: an op at a time", None),
        ("compiled", "fuse", why, "default"),
    ):
        name = f"c{number:02d}.{label}"
        shape = ChainShape.model_validate(
            {"op": "chain", "name": name, "calls": chain.calls, "chain": chain,
             **({"compile": compiled} if compiled else {})},
        )  # fmt: skip
        by_stage.setdefault(stage, []).append(json.dumps(shape.written()))
        tries.append(PlannedTry(group=f"{stage}:{name}", label=label, kind=kind, why=note))
    return PlannedMove(
        rank=rank, stage=stage, group=chain.name, op="chain", calls=chain.calls,
        measured_us=chain.real_us or 0.0, recoverable_at_sol_us=None, tries=tries,
    )  # fmt: skip
