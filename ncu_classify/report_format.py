"""Report file names (placeholder until the reader work lands)."""

from __future__ import annotations

from pathlib import Path

REPORT_SUFFIXES = (".ncu-rep", ".ncu-rep.xz", ".ncu-rep.gz", ".ncu-rep.bz2")


def report_stem(path: Path | str) -> str:
    """`vae` for `raw/vae.ncu-rep.xz`."""
    name = Path(path).name
    for suffix in REPORT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
