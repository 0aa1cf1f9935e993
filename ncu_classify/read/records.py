"""Kernel rows: what the report reader extracts from one profiled kernel, in card units."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class KernelRecord(BaseModel):
    """One profiled kernel: identity, NVTX context and normalised metric values."""

    report: str
    range_index: int
    action_index: int
    mangled: str
    demangled: str
    function: str
    nvtx_ranges: list[str] = Field(default_factory=list)
    values: dict[str, float | None]
    sources: dict[str, str]
    missing: list[str]
    unit_problems: list[str] = Field(default_factory=list)
    replay_passes: int | None = None
    device: dict[str, str | int | None] = Field(default_factory=dict)
    hot_units: dict[str, list[tuple[str, float]]] = Field(
        default_factory=dict, description="top entries of the SM and memory breakdowns"
    )


class ReportRead(BaseModel):
    """All kernels of one report file, in launch order."""

    path: str
    kernels: list[KernelRecord]


def gpu_of(records: list[KernelRecord]) -> dict[str, Any]:
    """Device facts of the first kernel, plus the range of SM clocks seen across kernels."""
    if not records:
        return {}
    gpu: dict[str, Any] = dict(records[0].device)
    clocks = [r.values.get("sm_clock_ghz") for r in records]
    seen = [c for c in clocks if c is not None]
    if seen:
        gpu["sm_clock_ghz_min"], gpu["sm_clock_ghz_max"] = min(seen), max(seen)
    return gpu
