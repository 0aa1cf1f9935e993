"""Nsight Compute report files -> kernel rows, each row handed to a function the caller gives.

names       which files are reports, the stem a report is known by
framing     whether a file is a whole report, without ncu_report
inflate     compressed reports (.xz, .gz, .bz2) inflated
lean        a copy of a report without its source blocks
preload     NVIDIA's metrics library loaded on a thread meanwhile
kernels     the only module that imports ncu_report: reports -> kernel rows
breakdowns  the hot units read from the throughput breakdowns
rows        the kernel rows (KernelRow)
slices      whole reports or windows of a large one per reader
parallel    many reports read in bounded forked children
workers     a process pool that cannot deadlock on shutdown
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "KernelRow",
    "is_report_name",
    "read_all",
    "read_report",
    "report_stem",
]
__getattr__ = lazy_face(
    __name__,
    {
        "KernelRow": "rows",
        "is_report_name": "names",
        "read_all": "parallel",
        "read_report": "kernels",
        "report_stem": "names",
    },
)
