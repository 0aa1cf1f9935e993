"""The ncu_report calls `classify` makes to build its cards, recorded once per report and then
replayed bare: the floor any classifier of these cards pays for reading (bench/classify_speed.py).

`record(path)` reads the report with the tool's reader while noting, per kernel, every metric
name it looks up; `replay(path, names)` opens the report again and makes the same calls with
nothing else around them: each action fetched, its three names, its NVTX stack, and per name
`metric_by_name`, then `has_value`, `as_double` and `unit` where the metric exists (the tool
calls no more than that on any metric; `unit` only on the first alias found).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any


def record(path: Path) -> list[list[str]]:
    """Per kernel, in report order, the metric names the tool's reader looks up."""
    import ncu_report

    from ncu_classify.read.kernels import read_report

    per_action: list[list[str]] = []
    original_fetch = ncu_report.IRange.action_by_idx
    original_lookup = ncu_report.IAction.metric_by_name

    def fetch(self: Any, index: int) -> Any:
        per_action.append([])
        return original_fetch(self, index)

    def lookup(self: Any, name: str) -> Any:
        per_action[-1].append(name)
        return original_lookup(self, name)

    ncu_report.IRange.action_by_idx, ncu_report.IAction.metric_by_name = fetch, lookup
    try:
        read_report(path)
    finally:
        ncu_report.IRange.action_by_idx, ncu_report.IAction.metric_by_name = (
            original_fetch,
            original_lookup,
        )
    return per_action


def actions(path: Path) -> Iterator[Any]:
    """Every action (profiled kernel) of the report, in report order."""
    import ncu_report

    context = ncu_report.load_report(str(path))
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            yield rng.action_by_idx(a)


def replay(path: Path, names: list[list[str]]) -> int:
    """The recorded reads, bare; returns the kernels read."""
    import ncu_report

    kernels = 0
    for action in actions(path):
        for base in (
            ncu_report.IAction.NameBase_MANGLED,
            ncu_report.IAction.NameBase_DEMANGLED,
            ncu_report.IAction.NameBase_FUNCTION,
        ):
            action.name(base)
        state = action.nvtx_state()
        if state is not None:
            for domain in state.domains():
                list(state.domain_by_id(domain).push_pop_ranges())
        for name in names[kernels]:
            metric = action.metric_by_name(name)
            if metric is not None and metric.has_value():
                metric.as_double()
                metric.unit()
        kernels += 1
    return kernels
