"""Build ncu command lines as plain lists, so that they can be tested and printed (`--dry-run`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# Every ncu run of this project: no stray `config.ncu-cfg`, the clocks the GPU would run at.
FIXED_OPTIONS = ("--config-file", "off", "--clock-control", "none")


def nvtx_include(group: str) -> str:
    """The `--nvtx-include` expression for a push/pop range named `group` (trailing slash!)."""
    return f"{group}/"


def ncu_argv(
    *,
    ncu: str,
    report_stem: Path,
    metrics: Sequence[str],
    groups: Sequence[str],
    target: Sequence[str],
) -> list[str]:
    """argv for one ncu process that profiles, in kernel replay, the kernels of `groups` only.

    `--config-file off` stops ncu reading a stray `config.ncu-cfg`; `--clock-control none`
    keeps the clocks the GPU would run at (the default locks them to base); every shape's NVTX
    range is included by name, so warm-up launches outside the ranges are never profiled.
    """
    argv = [
        ncu,
        *FIXED_OPTIONS,
        "--replay-mode",
        "kernel",
        "--target-processes",
        "all",
        "--nvtx",
    ]
    for group in groups:
        argv += ["--nvtx-include", nvtx_include(group)]
    argv += ["--metrics", ",".join(metrics), "--export", str(report_stem), "--force-overwrite"]
    return argv + list(target)
