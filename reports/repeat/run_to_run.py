"""Recompute the `run_to_run` block of ncu_classify/data/noise_h200.yaml: the standard deviation
of a capture's figure between captures, from the three single captures of the 480x832 workload
the noise file was measured on (their committed cards). Per metric, the root mean square over
the 34 dominant kernels of each shape's sample sd across the three; durations as the sd of
ln(duration), in %. Shapes whose dominant kernel differs between captures are left out.

    python reports/repeat/run_to_run.py
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.cards.files import load_card_file  # noqa: E402
from ncu_classify.cards.rollup import named_dominant  # noqa: E402
from ncu_classify.verdicts.judge import kernel_values  # noqa: E402

CAPTURES = (
    "reports/diff/cards/w480_gpu0.json",
    "reports/diff/cards/w480_gpu1.json",
    "fixtures/workload_h200_480x832/cards.json",
)
METRICS = (
    "sm_pct", "tensor_pct", "tensor_active_pct", "dram_pct", "l2_pct", "l2_hit_pct", "issue_pct",
    "l1_pipe_pct", "fma_pipe_pct", "alu_pipe_pct", "warps_active_pct", "sm_active_over_elapsed",
)  # fmt: skip


def run_to_run() -> dict[str, float]:
    """metric -> pooled sd between the captures (`duration_pct`: of ln(duration), in %)."""
    files = [load_card_file(ROOT / path) for path in CAPTURES]
    by_group = [{c.group: c for c in f.cards} for f in files]
    variances: dict[str, list[float]] = {m: [] for m in ("duration_pct", *METRICS)}
    for group in by_group[0]:
        tops = [named_dominant(cards[group]) for cards in by_group if group in cards]
        if len(tops) != len(files) or any(t is None for t in tops):
            continue
        if len({t.mangled_name for t in tops if t}) != 1:
            continue
        values = [kernel_values(t.metrics, t.evidence) for t in tops if t]
        durations = [v["dur_us"] for v in values]
        if all(d for d in durations):
            logs = [math.log(d) for d in durations if d]
            variances["duration_pct"].append(statistics.variance(logs) * 1e4)
        for metric in METRICS:
            series = [v.get(metric) for v in values]
            if None not in series:
                variances[metric].append(statistics.variance([s for s in series if s is not None]))
    return {m: math.sqrt(statistics.fmean(v)) for m, v in variances.items() if v}


if __name__ == "__main__":
    for metric, sd in run_to_run().items():
        print(f"{metric}: {sd:.4f}")
