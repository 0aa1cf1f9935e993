"""Probe: what each part of capture's metric list costs ncu per kernel (issue 21).

ncu costs about 10 ms plus 31 ms per extra replay pass per profiled kernel (`probe_ncu_overhead`),
in kernel and application replay alike (`probe_replay_modes`). Whether every pass costs the same,
or some metrics (SASS instruction counts, the throughput breakdowns) make passes dearer, decides
whether a cheaper list exists. For subsets of the list this times a CUDA program with no torch
(a one-warp kernel launched 10 and 40 times, each launch profiled) and takes the slope: seconds
per profiled kernel, free of the process start, beside the pass count ncu reports. Run on the GPU
host from the repository root:

    python3 reports/speed/probe_pass_cost.py --json $OUT/pass_cost.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.capture.drill import capture_metrics  # noqa: E402
from ncu_classify.core.metrics import LIGHT_METRICS, TENSOR_ACTIVE, TENSOR_ELAPSED  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_replay_modes import C_PROGRAM  # noqa: E402  (the same one-warp program)

SASS = ("smsp__sass",)
TENSOR = ("sm__ops_path",)
BREAKDOWN = ("breakdown:",)


def subsets(full: list[str]) -> dict[str, list[str]]:
    """Named parts of the capture list."""
    without = lambda *prefixes: [n for n in full if not n.startswith(prefixes)]  # noqa: E731
    only = lambda *prefixes: [n for n in full if n.startswith(prefixes)]  # noqa: E731
    return {
        "one_metric": ["gpu__time_duration.sum"],
        "full": full,
        "without_breakdowns": without(*BREAKDOWN),
        "without_sass": without(*SASS),
        "without_tensor_ops": without(*TENSOR),
        "without_breakdowns_sass_tensor": without(*BREAKDOWN, *SASS, *TENSOR),
        "sm_throughput_only": ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
        "sm_breakdown_only": ["breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed"],
        "memory_breakdown_only": only("breakdown:gpu__compute"),
        "sass_only": only(*SASS),
        "tensor_ops_only": only(*TENSOR),
        **proxies(),
    }


def proxies() -> dict[str, list[str]]:
    """Lists for a light tier (issue 41): the default rules' composite throughputs one at a
    time, and single counters from which a verdict's figures could be approximated."""
    raw = ["gpu__time_duration.sum", "dram__bytes.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
           "sm__cycles_active.avg", "sm__cycles_elapsed.avg"]  # fmt: skip
    pipes = [TENSOR_ELAPSED, "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
             "sm__warps_active.avg.pct_of_peak_sustained_active"]  # fmt: skip
    return {
        "dram_throughput_only": ["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
        "l2_throughput_only": ["lts__throughput.avg.pct_of_peak_sustained_elapsed"],
        "tensor_pipe_only": [TENSOR_ELAPSED, TENSOR_ACTIVE],
        "bytes_and_cycles": raw,
        "bytes_cycles_pipes": raw + pipes,
        "light": list(LIGHT_METRICS),  # capture --light-after's list (core.metrics)
        "bytes_cycles_pipes_fma_lsu": raw + pipes + [
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"],
        "default_rules": ["gpu__time_duration.sum",
                          "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                          "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                          "lts__throughput.avg.pct_of_peak_sustained_elapsed", TENSOR_ELAPSED,
                          "sm__warps_active.avg.pct_of_peak_sustained_active",
                          "sm__cycles_active.avg", "sm__cycles_elapsed.avg"],
    }  # fmt: skip


def passes(report: Path) -> list[int | str]:
    """Distinct replay pass counts of a report's kernels."""
    import ncu_report  # type: ignore[import-not-found]

    ctx = ncu_report.load_report(str(report))
    rng = ctx.range_by_idx(0)
    got: set[int | str] = set()
    for i in range(rng.num_actions()):
        metric = rng.action_by_idx(i).metric_by_name("profiler__replayer_passes")
        got.add(int(metric.as_uint64()) if metric is not None else -1)
    return sorted(got)


def timed(exe: Path, metrics: list[str], launches: int, stem: Path) -> float:
    """Wall seconds of ncu profiling every one of `launches` launches."""
    cmd = ["ncu", "--config-file", "off", "--clock-control", "none", "--replay-mode", "kernel"]
    cmd += ["-c", str(launches), "--metrics", ",".join(metrics), "--export", str(stem)]
    start = time.perf_counter()
    subprocess.run([*cmd, "--force-overwrite", str(exe), str(launches)], capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--only", nargs="*", help="these subsets alone (by name)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    (work / "k.cu").write_text(C_PROGRAM)
    exe = work / "k"
    subprocess.run(["nvcc", "-arch=sm_90", "-o", str(exe), str(work / "k.cu")], check=True)
    rows = []
    for name, metrics in subsets(capture_metrics(None)).items():
        if args.only and name not in args.only:
            continue
        few, many = (timed(exe, metrics, n, work / f"{name}_{n}") for n in (10, 40))
        report = work / f"{name}_40.ncu-rep"
        got = passes(report) if report.exists() else ["no report: ncu refused the list"]
        row = {"subset": name, "metrics": len(metrics), "passes": got}
        row["s_per_kernel"] = round((many - few) / 30, 4)
        row["wall_10_40"] = [round(few, 2), round(many, 2)]
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
