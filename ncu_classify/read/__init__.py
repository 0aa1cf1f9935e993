"""Nsight Compute report files -> kernel rows: report names (names), whether a file is a
whole report (framing), compressed reports inflated (inflate), the one module that imports
ncu_report (kernels), the kernel rows (rows), and many reports read in bounded forked children
(parallel, workers), each row handed to a function the caller gives.
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
