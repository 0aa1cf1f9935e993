"""A recording as the shapes file will hold it, as a value: no torch here, so that the
record command's summary line and its tests read it on a machine without torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..shapes.chains import Chain
from ..shapes.recorded import Recorded


@dataclass
class ShapesDocument:
    """A recording as the shapes file will hold it: how it was recorded, with its time ledger
    (`recorded.totals`: the shapes-file models), and each stage's shapes as the mappings the
    recorder made, in the order their fields are written (validated by `validated_document`).
    `copies` (memory copies and sets per stage, us; None untimed) waits for the stage totals."""

    recorded: Recorded
    stages: dict[str, list[dict[str, Any]]]
    copies: dict[str, float] | None = None
    seed: int = 0
    warmup: int = 3
    cudnn_benchmark: bool = False
    # the chains of device ops per stage (`record.chain_section`), written after the stages
    chains: dict[str, list[Chain]] = field(default_factory=dict)
