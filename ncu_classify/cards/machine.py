"""What the cards were measured on: the GPU of a card (from its report's device attributes,
with the SM clocks seen across its kernels), and each capture's machine and software (from its
manifest). Typed facts, written with what they hold (`core.facts`)."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.facts import Facts, Machine

Number = int | float  # an int stays an int when written back (1980000, not 1980000.0)


class GpuInfo(Facts):
    """The GPU a card's kernels ran on."""

    name: str | None = None
    sm_count: int | None = None
    l2_bytes: Number | None = None
    cc_major: int | None = None
    cc_minor: int | None = None
    sm_clock_max_khz: Number | None = None  # caps the roofline's SM and L1 ceilings
    dram_clock_max_khz: Number | None = None  # caps the DRAM ceiling
    sm_clock_ghz_min: Number | None = None  # SM clock measured across the card's kernels
    sm_clock_ghz_max: Number | None = None

    def max_khz(self, key: str) -> float | None:
        """A maximum clock in kHz (`sm_clock_max_khz`, `dram_clock_max_khz`), None if unknown
        or not a positive number."""
        value = getattr(self, key, None)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            return None
        return float(value)


class Software(Facts):
    """The software a capture ran: driver, ncu, CUDA runtime, torch, cuDNN."""

    driver: str | None = None
    ncu: str | None = None
    cuda_runtime: str | None = None
    torch: str | None = None
    cudnn: int | str | None = None


class CaptureInfo(Machine):
    """One capture folder read by classify: when, which shapes file, which GPU and software."""

    WRITE_ORDER = ("folder", "created_at", "shapes_file", *Machine.model_fields)

    folder: str | None = None
    created_at: str | None = None
    shapes_file: str | None = None
    capture_tool_version: str | None = None

    def software(self) -> Software:
        """The software facts of this capture, all of them named (null where unknown)."""
        return Software(**{key: getattr(self, key) for key in Software.model_fields})


def first_gpu(gpus: Iterable[GpuInfo]) -> GpuInfo:
    """The first GPU that is known at all (cards of one file ran on one GPU), else an empty one."""
    return next((gpu for gpu in gpus if gpu.holds()), GpuInfo())


def sm_clock_range(gpus: Iterable[GpuInfo]) -> tuple[float, float] | None:
    """The lowest and highest SM clock seen (GHz) across cards, None if none was measured."""
    seen = [
        float(value)
        for gpu in gpus
        for value in (gpu.sm_clock_ghz_min, gpu.sm_clock_ghz_max)
        if isinstance(value, (int, float))
    ]
    return (min(seen), max(seen)) if seen else None
