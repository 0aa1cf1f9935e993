"""How far an alternative's output is from the original's: the output samples the replay wrote
(replay.outputs: the same logical positions of each output) set against each other, with the
tolerance of the lowest precision either ran in. Read with the standard library: neither
torch nor numpy may share a process with NVIDIA's report reader on the GPU host (it crashes)."""

from __future__ import annotations

import json
import math
import sys
from array import array
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# Normwise tolerances (max |alt - orig| over max |orig|), by the lowest precision involved:
# torch.testing's relative tolerances for bf16 and fp16, TF32's 10-bit mantissa, and fp32's
# reassociation (another kernel sums in another order).
TOLERANCE = {"bf16": 1.6e-2, "fp16": 1e-3, "tf32": 1e-3, "fp32": 1e-5}
PRECISION_ORDER = ("bf16", "fp16", "tf32", "fp32")


class Numerics(BaseModel):
    """An alternative's output against the original's, over the sampled elements."""

    model_config = ConfigDict(extra="forbid")
    compared: bool
    why_not: str | None = Field(default=None, description="why the outputs were not compared")
    elements: int | None = Field(default=None, description="elements compared (a sample)")
    max_abs_error: float | None = None
    max_rel_error: float | None = Field(
        default=None, description="max |alt - orig| over max |orig| (normwise)"
    )
    tolerance: float | None = None
    tolerance_of: str | None = Field(default=None, description="the precision it is named for")
    within: bool | None = Field(default=None, description="max_rel_error <= tolerance")
    padded: bool = Field(
        default=False,
        description="the alternative's output is the original's padded along one dimension"
        " (a tile-padded GEMM's extra rows): compared over the original's positions where both"
        " samples are whole outputs, else not compared (a tile-padding move may still win)",
    )


def lowest_precision(*precisions: str) -> str:
    """The least precise of the precisions named (bf16 < fp16 < tf32 < fp32)."""
    known = [p for p in precisions if p in PRECISION_ORDER] or ["fp32"]
    return min(known, key=PRECISION_ORDER.index)


def compare_outputs(folder: Path, original: str, alternative: str, precision: str) -> Numerics:
    """The alternative's sample against the original's (by their stems in `folder`)."""
    try:
        facts = [_facts(folder, stem) for stem in (original, alternative)]
    except _Unreadable as exc:
        return Numerics(compared=False, why_not=str(exc))
    if facts[0] is None or facts[1] is None:
        missing = "the original's" if facts[0] is None else "the alternative's"
        return Numerics(compared=False, why_not=f"{missing} output was not written")
    if facts[0] != facts[1]:
        return _other_shapes(folder, (original, alternative), facts[0], facts[1], precision)
    try:
        ref, alt = (_floats(folder / f"{stem}.f32") for stem in (original, alternative))
    except _Unreadable as exc:
        return Numerics(compared=False, why_not=str(exc))
    if len(ref) != len(alt):
        return Numerics(compared=False, why_not="the samples differ in length")
    return _against(ref, alt, precision)


def _other_shapes(
    folder: Path, stems: tuple[str, str], orig: list[int], alt: list[int], precision: str
) -> Numerics:
    """Outputs of different shapes: a padded one (larger along one dimension alone) is set
    against the original over the original's positions when both samples hold every element
    in logical order (the replay samples an output whole up to 2^18 elements); a larger padded
    output is sampled at other positions, so it is not compared (a tile-padding move may still
    win: the same arithmetic on more rows); any other difference is not compared."""
    shapes = f"{orig} vs {alt}"
    grown = [d for d, (o, a) in enumerate(zip(orig, alt, strict=False)) if o != a]
    if len(orig) != len(alt) or len(grown) != 1 or alt[grown[0]] < orig[grown[0]]:
        return Numerics(compared=False, why_not=f"output shapes differ ({shapes})")
    try:
        ref, padded = (_floats(folder / f"{stem}.f32") for stem in stems)
    except _Unreadable as exc:
        return Numerics(compared=False, why_not=str(exc))
    if len(ref) != math.prod(orig) or len(padded) != math.prod(alt):
        return Numerics(
            compared=False, padded=True,
            why_not=f"padded shape ({shapes}): the same arithmetic on more rows, sampled at"
            " other positions",
        )  # fmt: skip
    dim = grown[0]
    inner = math.prod(orig[dim + 1 :])
    block, step = orig[dim] * inner, alt[dim] * inner
    overlap = array("f")
    for start in range(0, math.prod(orig[:dim]) * step, step):
        overlap.extend(padded[start : start + block])
    return _against(ref, overlap, precision).model_copy(update={"padded": True})


def _against(ref: array[float], alt: array[float], precision: str) -> Numerics:
    """The normwise error of `alt` against `ref` (as long) and whether it is within the
    tolerance of `precision`."""
    broken = sum(1 for r in ref if not math.isfinite(r))
    if broken:  # NaN against NaN is no agreement, nor a disagreement the alternative made
        return Numerics(
            compared=False,
            why_not=f"{broken} elements of the original's output are not finite: nothing to"
            " compare against",
        )
    diff = [abs(a - r) for a, r in zip(alt, ref, strict=True)]
    bad = sum(1 for d in diff if not math.isfinite(d))
    if bad:
        return Numerics(
            compared=True, elements=len(ref), within=False, tolerance_of=precision,
            tolerance=TOLERANCE[precision], why_not=f"{bad} elements are not finite in one output",
        )  # fmt: skip
    scale = max((abs(r) for r in ref), default=0.0)
    worst = max(diff, default=0.0)
    relative = worst / scale if scale else (0.0 if worst == 0.0 else math.inf)
    return Numerics(
        compared=True,
        elements=len(ref),
        max_abs_error=float(f"{worst:.6g}"),
        max_rel_error=float(f"{relative:.6g}"),
        tolerance=TOLERANCE[precision],
        tolerance_of=precision,
        within=relative <= TOLERANCE[precision],
    )


class _Unreadable(Exception):
    """A sample or its sidecar that cannot be read (a write cut short, a file edited): the
    outputs are then not compared, and the reason names the file."""


def _floats(path: Path) -> array[float]:
    """A sample file: little-endian float32 values."""
    data = path.read_bytes()
    if len(data) % 4:
        raise _Unreadable(f"{path.name}: {len(data)} bytes, not whole float32 values")
    values = array("f")
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _facts(folder: Path, stem: str) -> list[int] | None:
    """The output's shape from the sample's sidecar, None when it was not written."""
    path = folder / f"{stem}.json"
    if not path.is_file() or not (folder / f"{stem}.f32").is_file():
        return None
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _Unreadable(f"{path.name}: not the JSON the replay writes") from None
    shape = facts.get("shape") if isinstance(facts, dict) else None
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise _Unreadable(f"{path.name}: no output shape (a list of sizes)")
    return shape
