"""Run-to-run noise: how far a metric or a duration moves between two captures of the same
shape on the same machine, so that `diff` can tell a flip or a slowdown from noise, and
`classify` whether a repeated card's verdict would survive another capture.

A noise file is YAML validated by pydantic: a duration tolerance in percent and a tolerance per
card metric in its own unit. The packaged one holds the largest differences measured between
three captures of the 480x832 workload on H200s (reports/diff/README.md says how); a team
measures its own with `ncu-classify diff` of two repeat captures (the JSON's `noise_seen`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import NoiseError
from .metrics import EXACT_METRICS, RULE_METRICS
from .textio import read_text
from .yamlio import validate_yaml

DEFAULT_NOISE = Path(__file__).resolve().parent.parent / "data" / "noise_h200.yaml"
MAX_NOISE_BYTES = 64 << 10
Tolerance = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class RunToRun(BaseModel):
    """How much one capture's figure moves between captures, as a standard deviation: what a
    single capture's repeats cannot see (each repeat runs in the same process, on the same
    buffers and clocks), added to a card's own spread when its verdict's stability and a
    diff's intervals are judged."""

    model_config = ConfigDict(extra="forbid", strict=True)
    duration_pct: Tolerance = Field(description="sd of ln(duration) between captures, in %")
    metrics: dict[str, Tolerance] = Field(
        default_factory=dict, description="metric key -> sd between captures, its unit"
    )
    default: Tolerance = Field(default=0.0, description="for percentages not listed")

    @field_validator("metrics")
    @classmethod
    def _known(cls, metrics: dict[str, float]) -> dict[str, float]:
        return _known_metrics(metrics)

    def sd(self, metric: str, value: float) -> float:
        """The run-to-run sd of `metric` at `value` (durations relative, others absolute); a
        percentage not listed takes `default`; 0 for a launch figure (fixed by the launch) and
        for any other metric not listed (its scale is unknown)."""
        if metric == "dur_us":
            return value * self.duration_pct / 100
        if metric in self.metrics:
            return self.metrics[metric]
        return self.default if metric.endswith("_pct") and metric not in EXACT_METRICS else 0.0


class Noise(BaseModel):
    """Tolerances within which two captures of one shape are the same."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    duration_pct: Tolerance = Field(description="|candidate / baseline - 1| in percent")
    metrics: dict[str, Tolerance] = Field(
        default_factory=dict, description="metric key -> largest |difference| seen, its unit"
    )
    default: Tolerance = Field(default=0.0, description="for metrics not listed")
    run_to_run: RunToRun | None = Field(
        default=None, description="sd between captures, for cards measured with --repeat"
    )

    @field_validator("metrics")
    @classmethod
    def _known(cls, metrics: dict[str, float]) -> dict[str, float]:
        return _known_metrics(metrics)

    def of(self, metric: str) -> float:
        """The tolerance of one metric; a launch figure not listed (grid, the persistent flag)
        has none: it is fixed by the launch, so any move is real."""
        return self.metrics.get(metric, 0.0 if metric in EXACT_METRICS else self.default)


def _known_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """Metric keys the rules know; durations only as a relative figure."""
    unknown = sorted(set(metrics) - RULE_METRICS)
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}")
    if "dur_us" in metrics:
        raise ValueError("durations take a relative tolerance: use duration_pct, not dur_us")
    return metrics


def load_noise(path: Path | None = None) -> tuple[Noise, str]:
    """A validated noise file (default: the packaged H200 one) and its label; errors name
    file:line:field."""
    path = path or DEFAULT_NOISE
    text = read_text(path, NoiseError, MAX_NOISE_BYTES)
    label = "default" if path == DEFAULT_NOISE else str(path)
    return validate_yaml(path, Noise, NoiseError, text), label
