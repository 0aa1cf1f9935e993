"""Probe: kernel replay against application replay for capture's metric list (issue 21).

Kernel replay saves and restores the device memory around every profiled kernel and replays it
once per pass; application replay runs the whole target once per pass instead and matches the
kernels across runs. Which is cheaper depends on what a pass costs per kernel in each mode,
against what a run of the target costs. This times both, on:

  * a CUDA program with no torch (N launches of a one-warp kernel, N = 20 and 80): the slope
    is ncu's cost per kernel per mode, the intercept the start-up;
  * capture's own replay target on `--limit` shapes of a shapes file (a sample taken at a
    stride across the file), exactly as capture runs it (its ncu argv, with only the replay
    mode changed), and compares the two reports kernel by kernel (names, durations, sm_pct)
    so that a faster mode that measures something else is seen; nvidia-smi samples the
    memory the GPU holds meanwhile (kernel replay saves and restores all of it per kernel).

It also prints ncu's help lines on replay modes and multi-GPU pass distribution. Run on the
GPU host from the repository root:

    python3 reports/speed/probe_replay_modes.py --shapes S.yaml --limit 40 --json $OUT/m.json
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.capture.drill import capture_metrics  # noqa: E402
from ncu_classify.capture.ncu_cmd import ncu_argv  # noqa: E402
from ncu_classify.replay.protocol import BatchFile, write_batch  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402

C_PROGRAM = r"""
#include <cstdlib>
__global__ void k(float *p) { p[threadIdx.x] += 1.0f; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  float *p;
  cudaMalloc(&p, 4 << 20);
  for (int i = 0; i < n; i++) { k<<<1, 32>>>(p); cudaDeviceSynchronize(); }
  return 0;
}
"""
MODES = {
    "kernel": ["--replay-mode", "kernel"],
    "application": ["--replay-mode", "application", "--app-replay-match", "grid"],
}


def help_lines() -> list[str]:
    """ncu's help lines that name replay modes or multi-GPU metric distribution."""
    done = subprocess.run(["ncu", "--help"], capture_output=True, text=True, check=False)
    keys = ("replay", "distribution", "app-range", "range-replay")
    return [line.rstrip() for line in done.stdout.splitlines() if any(k in line for k in keys)]


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, exit code and the tail of stderr+stdout of one command."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.returncode, (done.stdout + done.stderr)[-800:]


def kernels_of(report: Path) -> list[dict]:
    """Per profiled kernel: name, duration (ns), sm_pct and replay passes."""
    import ncu_report  # type: ignore[import-not-found]

    ctx = ncu_report.load_report(str(report))
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            row = {"name": act.name()}
            for key, metric in (
                ("ns", "gpu__time_duration.sum"),
                ("sm_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                ("passes", "profiler__replayer_passes"),
            ):
                m = act.metric_by_name(metric)
                row[key] = m.as_double() if m is not None else None
            out.append(row)
    return out


def c_program_rows(work: Path, metrics: list[str]) -> list[dict]:
    """The no-torch program under both modes at two launch counts."""
    (work / "k.cu").write_text(C_PROGRAM)
    exe = work / "k"
    build = subprocess.run(
        ["nvcc", "-arch=sm_90", "-o", str(exe), str(work / "k.cu")],
        capture_output=True,
        text=True,
        check=False,
    )
    if build.returncode:
        return [{"error": build.stderr[-400:]}]
    rows = []
    for mode, flags in MODES.items():
        for n in (20, 80):
            stem = work / f"c_{mode}_{n}"
            cmd = ["ncu", "--config-file", "off", "--clock-control", "none", *flags]
            cmd += ["-c", str(n), "--metrics", ",".join(metrics), "--export", str(stem)]
            wall, code, tail = timed([*cmd, "--force-overwrite", str(exe), str(n)])
            row = {"probe": "c_program", "mode": mode, "launches": n, "wall_s": round(wall, 2)}
            row["exit"] = code
            report = Path(f"{stem}.ncu-rep")
            if report.exists():
                got = kernels_of(report)
                row["kernels"] = len(got)
                row["passes"] = sorted({k["passes"] for k in got})
            else:
                row["tail"] = tail
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def target_rows(work: Path, shapes_file: Path, limit: int, metrics: list[str]) -> list[dict]:
    """Capture's replay target on the first `limit` shapes, under both modes, compared."""
    source = shapes_file
    if shapes_file.suffix == ".xz":
        source = work / shapes_file.name.removesuffix(".xz")
        source.write_bytes(lzma.decompress(shapes_file.read_bytes()))
    shapes = load_shapes(source)
    every = shapes.entries()
    entries = every[:: max(1, len(every) // limit)][:limit]  # a sample across the model
    rows, reports = [], {}
    for mode, flags in MODES.items():
        batch = BatchFile(
            seed=shapes.seed,
            warmup=shapes.warmup,
            cudnn_benchmark=shapes.cudnn_benchmark,
            entries=entries,
        )
        write_batch(work / f"{mode}.batch.json", batch)
        target = [sys.executable, "-m", "ncu_classify.replay"]
        target += [str(work / f"{mode}.batch.json"), str(work / f"{mode}.status.jsonl")]
        argv = ncu_argv(
            ncu="ncu",
            report_stem=work / f"t_{mode}",
            metrics=metrics,
            groups=[e.group for e in entries],
            target=target,
        )
        at = argv.index("--replay-mode")
        argv[at : at + 2] = flags
        smi = subprocess.Popen(
            [
                "nvidia-smi",
                "--query-gpu=memory.used",
                "--format=csv,noheader,nounits",
                "-lms",
                "200",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        wall, code, tail = timed(argv)
        smi.terminate()
        used = [int(x) for x in smi.communicate()[0].split() if x.isdigit()]
        row = {"probe": "replay_target", "mode": mode, "shapes": len(entries)}
        row.update(wall_s=round(wall, 2), exit=code)
        if used:
            row["gpu_mib_used_median"], row["gpu_mib_used_max"] = statistics.median(used), max(used)
        report = work / f"t_{mode}.ncu-rep"
        if report.exists():
            reports[mode] = kernels_of(report)
            row["kernels"] = len(reports[mode])
            row["passes"] = sorted({k["passes"] for k in reports[mode]})
        else:
            row["tail"] = tail
        print(json.dumps(row), flush=True)
        rows.append(row)
    if len(reports) == 2:
        rows.append(compare(reports["kernel"], reports["application"]))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def compare(kernel: list[dict], app: list[dict]) -> dict:
    """Kernel-by-kernel agreement of two reports of the same shapes."""
    same = len(kernel) == len(app) and all(
        a["name"] == b["name"] for a, b in zip(kernel, app, strict=True)
    )
    row: dict = {"probe": "agreement", "same_kernels_in_order": same}
    if same:
        ratios = [b["ns"] / a["ns"] for a, b in zip(kernel, app, strict=True) if a["ns"]]
        gaps = [abs(b["sm_pct"] - a["sm_pct"]) for a, b in zip(kernel, app, strict=True)]
        row.update(
            duration_ratio_median=round(statistics.median(ratios), 4),
            duration_ratio_min=round(min(ratios), 4),
            duration_ratio_max=round(max(ratios), 4),
            sm_pct_gap_median=round(statistics.median(gaps), 3),
            sm_pct_gap_max=round(max(gaps), 3),
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    metrics = capture_metrics(None)
    work = Path(tempfile.mkdtemp())
    result: dict = {"help": help_lines()}
    print("\n".join(result["help"]), flush=True)
    result["c_program"] = c_program_rows(work, metrics)
    result["replay_target"] = target_rows(work, args.shapes, args.limit, metrics)
    args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
