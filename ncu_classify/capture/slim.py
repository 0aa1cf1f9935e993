"""`capture --drop-sources`: each finished report rewritten without its source blocks.

ncu embeds the SASS and CUDA source of every profiled module in the report: 88 % of a
capture's bytes (340 KB a kernel in the Wan 14B capture, 40 KB without: bench/report_size.py),
none of them a counter, so no card figure changes. What is lost is Nsight Compute's Source page
for these kernels (they have no source counters anyway: capture asks for `--metrics` only). The
rewrite happens on ncu's own file before it enters the capture folder, through a checked copy
and a rename, so a crash or a full disk leaves the report as ncu wrote it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..core.errors import ReportError
from ..read.framing import SUPPORTED_FORMAT, check_report
from ..read.lean import copy_without_sources


def drop_sources(report: Path) -> int | str:
    """Rewrite the plain report `report` in place without its source blocks; the bytes
    dropped (0: it had none), or why it is left as ncu wrote it: damaged (its readers will
    say how), compressed (`.ncu-repz`), of another format, or not rewritable here."""
    try:
        info = check_report(report, label=report)
    except (ReportError, OSError) as exc:
        return f"left as ncu wrote it: {exc}"
    if info.kind != ".ncu-rep":
        return "left as ncu wrote it: a zstd report (.ncu-repz) is not rewritten"
    if info.format_version != SUPPORTED_FORMAT:
        return f"left as ncu wrote it: report format {info.format_version} is not rewritten"
    if not info.source_blocks:
        return 0
    slim = report.with_name(f"{report.name}.slim")
    try:
        copy_without_sources(report, slim, info)
        with slim.open("rb+") as handle:
            os.fsync(handle.fileno())
        kept = check_report(slim, label=slim)
        if kept.kernels != info.kernels or kept.source_blocks:
            raise ReportError("the copy does not hold the report's kernels")
        os.replace(slim, report)
    except (ReportError, OSError) as exc:
        with contextlib.suppress(OSError):  # the report stays as ncu wrote it
            slim.unlink(missing_ok=True)
        return f"left as ncu wrote it: its copy failed: {os_text(exc)}"
    return info.size - kept.size


def os_text(exc: Exception) -> str:
    """An OSError as its reason alone (`No space left on device`), other errors as they are."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
