"""Kernel rows: what the report reader extracts from one profiled kernel, in card units."""

from __future__ import annotations

from pydantic import BaseModel, Field


class KernelRow(BaseModel):
    """One profiled kernel: identity, NVTX context and normalised metric values."""

    report: str
    range_index: int
    action_index: int
    mangled_name: str
    demangled_name: str
    function_name: str
    nvtx_ranges: list[str] = Field(default_factory=list)
    repeat: int | None = Field(
        default=None, description="which measurement of its shape (--repeat), if one of several"
    )
    metrics: dict[str, float | None]
    metric_sources: dict[str, str]
    missing_metrics: list[str]
    unit_problems: list[str] = Field(default_factory=list)
    replay_passes: int | None = None
    device: dict[str, str | int | None] = Field(default_factory=dict)
    hot_units: dict[str, list[tuple[str, float]]] = Field(
        default_factory=dict, description="top entries of the SM and memory breakdowns"
    )
    stalls: dict[str, float] | None = Field(
        default=None,
        description="warp-state counters where the report has them: stall reason -> warps per"
        " issue-active cycle, `cpi` and the drill-down deciders (core.stalls)",
    )


class ReportRead(BaseModel):
    """All kernels of one report file, in launch order."""

    path: str
    kernels: list[KernelRow]
