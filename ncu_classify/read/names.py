"""Which file names are Nsight Compute reports, and the stem a report is known by: the kinds ncu
writes (`.ncu-rep`, the zstd `.ncu-repz` of 2026.3, the `.nsight-cuprof-report` of 2019.x), each
plain or compressed by xz, gzip or bzip2. Names only: nothing here opens a file."""

from __future__ import annotations

from pathlib import Path

REPORT_KINDS = (".ncu-rep", ".ncu-repz", ".nsight-cuprof-report")
# The NVTX range capture --repeat opens around each measured launch, inside the shape's range:
# `repeat#2` is the second measurement of that shape.
REPEAT_RANGE = "repeat#"


COMPRESSIONS = ("", ".xz", ".gz", ".bz2")


REPORT_SUFFIXES = tuple(kind + comp for kind in REPORT_KINDS for comp in COMPRESSIONS)


def report_stem(path: Path | str) -> str:
    """`vae` for `raw/vae.ncu-rep.xz` or `raw/vae.ncu-repz`; the name itself when not a report."""
    name = Path(path).name
    for suffix in REPORT_SUFFIXES:  # none ends another, so order does not matter
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_report_name(path: Path | str) -> bool:
    """True for a file name classify reads as an Nsight Compute report."""
    return Path(path).name.endswith(REPORT_SUFFIXES)


def split_repeat(ranges: list[str]) -> tuple[list[str], int | None]:
    """A kernel's NVTX ranges without the innermost `repeat#N` one, and N (None without it)."""
    if ranges and ranges[-1].startswith(REPEAT_RANGE):
        number = ranges[-1].removeprefix(REPEAT_RANGE)
        if number.isdigit():
            return ranges[:-1], int(number)
    return ranges, None
