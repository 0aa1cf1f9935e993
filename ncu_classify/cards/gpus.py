"""The table of GPUs a projection uses (`data/gpus.yaml`): per GPU its SM count and maximum SM
clock, DRAM and L2 bandwidth, dense tensor peaks per dtype, FP32 and FP64 peaks, L2 and DRAM
size, each figure with its source (a datasheet or whitepaper, or how it was derived). Kept as
data so that a figure is corrected in one place, and validated so that a figure without its
source cannot enter."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, RootModel

from ..core.errors import GpuTableError, UsageError
from ..core.yamlio import validate_yaml

GPU_TABLE = Path(__file__).resolve().parent.parent / "data" / "gpus.yaml"
DTYPES = ("bf16", "fp16", "fp8", "tf32", "int8")


class Figure(BaseModel):
    """One figure and where it comes from; `derived`: no datasheet gives it (the source says
    how it was worked out); a None value: nobody publishes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: float | None
    source: str = Field(min_length=1)
    derived: bool = False


class Peaks(BaseModel):
    """Dense tensor peaks per dtype, TFLOP/s (TOP/s for int8); None where the GPU lacks it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    bf16: float | None
    fp16: float | None
    fp8: float | None
    tf32: float | None
    int8: float | None


class DensePeaks(BaseModel):
    """The dense tensor peaks and their source."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: Peaks
    source: str = Field(min_length=1)
    derived: bool = False


class GpuSpec(BaseModel):
    """One GPU of the table."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    device_names: list[str] = Field(
        min_length=1, description="the names CUDA and ncu give it (a card's gpu.name)"
    )
    compute_capability: str
    sm_count: Figure
    sm_clock_max_mhz: Figure
    dram_tbps: Figure
    l2_tbps: Figure
    dense_tflops: DensePeaks
    fp32_tflops: Figure
    fp64_tflops: Figure
    l2_bytes: Figure
    dram_bytes: Figure


class GpuTable(RootModel[dict[str, GpuSpec]]):
    """Table key (`H100-SXM`, `H200`, ...) -> GPU."""


@cache
def gpu_table(path: Path = GPU_TABLE) -> dict[str, GpuSpec]:
    """The table, validated once (a bad figure is one GpuTableError line: file:line:col)."""
    table = validate_yaml(path, GpuTable, GpuTableError).root
    for key, spec in table.items():
        if spec.sm_count.value is None or spec.sm_clock_max_mhz.value is None:
            raise GpuTableError(f"{path}: {key}: sm_count and sm_clock_max_mhz must be known")
    return table


def gpu_spec(key: str, option: str = "--to") -> tuple[str, GpuSpec]:
    """The table's GPU named `key` (its table key or a device name, any case); UsageError
    naming the known ones if there is none."""
    table = gpu_table()
    found = _lookup(key, table)
    if found is None:
        raise UsageError(f"{option} {key!r}: not a GPU of the table; known: {', '.join(table)}")
    return found


def gpu_for_device(device_name: str | None) -> tuple[str, GpuSpec] | None:
    """The table's GPU a card's `gpu.name` names, None if the table has none of that name."""
    return _lookup(device_name, gpu_table()) if device_name else None


def _lookup(name: str, table: dict[str, GpuSpec]) -> tuple[str, GpuSpec] | None:
    wanted = name.strip().casefold()
    for key, spec in table.items():
        if wanted == key.casefold() or wanted in (n.casefold() for n in spec.device_names):
            return key, spec
    return None
