"""A recording as the shapes file will hold it, as a value: no torch here, so that the
record command's summary line and its tests read it on a machine without torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..shapes.chains import Chain
from ..shapes.file import Shape
from ..shapes.recorded import Recorded

# A call as the recorder describes it, before validation: the shape's fields by their
# published names, in the order a shapes file writes them (its JSON is the call's identity).
CallShape = dict[str, Any]


@dataclass
class DescribedCalls:
    """What a recorder saw, before validation: how it was recorded, with its time ledger, and
    each stage's calls as the recorder described them. `copies` (memory copies and sets per
    stage, us; None untimed) waits for the stage totals."""

    recorded: Recorded
    stages: dict[str, list[CallShape]]
    copies: dict[str, float] | None = None


@dataclass
class ShapesDocument:
    """A recording as the shapes file will hold it: how it was recorded, with its time ledger
    (`recorded.totals`), and each stage's shapes as the shapes-file models (`validated_document`
    builds them from the described calls; `shapes_yaml` writes them)."""

    recorded: Recorded
    stages: dict[str, list[Shape]]
    seed: int = 0
    warmup: int = 3
    cudnn_benchmark: bool = False
    # the chains of device ops per stage (`record.chain_section`), written after the stages
    chains: dict[str, list[Chain]] = field(default_factory=dict)


def shape_kinds(shapes: list[Shape]) -> str:
    """`11 typed, 2 compiled, 38 device ops`: the shapes by kind, as the summary line and the
    shapes file's header say them (`compiled` only where there is one)."""
    from ..core.text import counted

    ops = sum(1 for s in shapes if s.op == "aten")
    compiled = sum(1 for s in shapes if s.op == "compiled")
    typed = len(shapes) - ops - compiled
    return (
        f"{typed} typed, "
        + (f"{compiled} compiled, " if compiled else "")
        + counted(ops, "device op")
    )
