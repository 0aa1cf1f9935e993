"""Probe: what ncu costs per profiled kernel, and what that cost depends on (issue 21).

The target launches tiny kernels (an in-place add on 1 M floats), each in its own NVTX range,
timing each launch + synchronize from the host: under ncu that time is ncu's whole work for the
kernel (memory save/restore, cache flushes, every replay pass, reading counters). It also times
unprofiled launches outside any range (what ncu costs the warm-up launches). The driver runs the
target without ncu and under ncu with one metric and with capture's metric list, with and
without a large device footprint (memory the process holds, which kernel replay may save and
restore), with `--cache-control none`, with 1,000 extra `--nvtx-include` filters, and counts the
replay passes of metric subsets. Run on the GPU host from the repository root:

    python3 reports/speed/probe_ncu_overhead.py drive --json $OUT/ncu_overhead.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.capture.ncu_cmd import FIXED_OPTIONS  # noqa: E402


def target(args: argparse.Namespace) -> None:
    """Launch the kernels and write their host-side times."""
    import torch

    hold = []
    if args.footprint_gb:
        hold.append(torch.ones(int(args.footprint_gb * (1 << 30) // 4), device="cuda"))
    if args.libs:  # cuBLAS and cuDNN loaded and their workspaces taken, as in a capture
        a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(1, 64, 8, 64, 64, device="cuda")
        torch.nn.functional.conv3d(v, torch.randn(64, 64, 3, 3, 3, device="cuda"))
        (a @ a).sum().item()
        del a, v
        if args.empty_cache:
            torch.cuda.empty_cache()
    x = torch.zeros(int(args.elements), device="cuda")
    for _ in range(3):
        x.add_(1)
    torch.cuda.synchronize()
    unprofiled = []
    for _ in range(args.kernels):
        t0 = time.perf_counter()
        x.add_(1)
        torch.cuda.synchronize()
        unprofiled.append(time.perf_counter() - t0)
    profiled = []
    for i in range(args.kernels):
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(f"k{i}")
        t0 = time.perf_counter()
        x.add_(1)
        torch.cuda.synchronize()
        profiled.append(time.perf_counter() - t0)
        torch.cuda.nvtx.range_pop()
    Path(args.out).write_text(json.dumps({"profiled": profiled, "unprofiled": unprofiled}))


def _passes(report: Path) -> list[int]:
    import ncu_report  # type: ignore[import-not-found]

    ctx = ncu_report.load_report(str(report))
    rng = ctx.range_by_idx(0)
    out = []
    for i in range(rng.num_actions()):
        m = rng.action_by_idx(i).metric_by_name("profiler__replayer_passes")
        out.append(int(m.as_uint64()) if m is not None else -1)
    return out


C_PROGRAM = r"""
#include <chrono>
#include <cstdio>
__global__ void k(float *p) { p[threadIdx.x] += 1.0f; }
int main(int argc, char **argv) {
  float *p;
  cudaMalloc(&p, 4 << 20);
  FILE *out = fopen(argv[1], "w");
  fprintf(out, "{\"profiled\": [");
  for (int i = 0; i < 20; i++) {
    auto t0 = std::chrono::steady_clock::now();
    k<<<1, 32>>>(p);
    cudaDeviceSynchronize();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fprintf(out, "%s%f", i ? ", " : "", s);
  }
  fprintf(out, "], \"unprofiled\": [0]}");
  fclose(out);
  return 0;
}
"""


def c_program(work: Path) -> Path | None:
    """The same tiny kernel in a CUDA program with no torch (20 launches, each timed)."""
    (work / "k20.cu").write_text(C_PROGRAM)
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-o", str(work / "k20"), str(work / "k20.cu")],
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stderr[-400:], flush=True) if done.returncode else None
    return work / "k20" if done.returncode == 0 else None


def run(
    name: str,
    ncu: list[str] | None,
    footprint: float,
    kernels: int,
    work: Path,
    extra: tuple[str, ...] = (),
    program: Path | None = None,
) -> dict:
    """One target process, under ncu or not; host times per kernel and the wall time."""
    times = work / f"{name}.json"
    cmd = [
        sys.executable,
        __file__,
        "target",
        "--out",
        str(times),
        "--kernels",
        str(kernels),
        "--footprint-gb",
        str(footprint),
        *extra,
    ]
    if program is not None:
        cmd = [str(program), str(times)]
    report = work / name
    if ncu is not None:
        cmd = [
            "ncu",
            *FIXED_OPTIONS,
            "--replay-mode",
            "kernel",
            "--nvtx",
            *ncu,
            "--export",
            str(report),
            "--force-overwrite",
            *cmd,
        ]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    row: dict = {"name": name, "wall_s": round(wall, 2), "exit": done.returncode}
    if done.returncode != 0 or not times.exists():
        row["error"] = (done.stderr or done.stdout)[-600:]
        return row
    got = json.loads(times.read_text())
    for key in ("profiled", "unprofiled"):
        row[f"{key}_ms_median"] = round(1000 * statistics.median(got[key]), 2)
        row[f"{key}_ms_max"] = round(1000 * max(got[key]), 2)
    if ncu is not None and Path(f"{report}.ncu-rep").exists():
        row["passes"] = sorted(set(_passes(Path(f"{report}.ncu-rep"))))
    print(json.dumps(row), flush=True)
    return row


def drive(args: argparse.Namespace) -> None:
    from ncu_classify.capture.drill import capture_metrics

    full = capture_metrics(None)
    one = ["gpu__time_duration.sum"]
    ranges = [f"--nvtx-include=k{i}/" for i in range(20)]
    decoys = [f"--nvtx-include=decoy:shape:{i}:bf16/" for i in range(1000)]
    metrics = lambda names: ["--metrics", ",".join(names)]  # noqa: E731
    work = Path(tempfile.mkdtemp())
    program = c_program(work)
    if args.libs_only:
        every = ["-c", "20", *metrics(full)]
        rows = [
            run("c_program_one_metric", ["-c", "20", *metrics(one)], 0, 20, work, program=program),
            run("c_program_capture_list", every, 0, 20, work, program=program),
            run("torch_libs_capture_list", [*ranges, *metrics(full)], 0, 20, work, ("--libs",)),
            run(
                "torch_libs_empty_cache_capture_list",
                [*ranges, *metrics(full)],
                0,
                20,
                work,
                ("--libs", "--empty-cache"),
            ),
        ]
        Path(args.json).write_text(json.dumps(rows, indent=1))
        return
    rows = [
        run("no_ncu", None, 0, 20, work),
        run("one_metric", [*ranges, *metrics(one)], 0, 20, work),
        run("capture_list", [*ranges, *metrics(full)], 0, 20, work),
        run("capture_list_8gb", [*ranges, *metrics(full)], 8, 20, work),
        run("one_metric_8gb", [*ranges, *metrics(one)], 8, 20, work),
        run("capture_list_32gb", [*ranges, *metrics(full)], 32, 20, work),
        run(
            "capture_list_cache_none",
            [*ranges, "--cache-control", "none", *metrics(full)],
            0,
            20,
            work,
        ),
        run("capture_list_1000_filters", [*ranges, *decoys, *metrics(full)], 0, 20, work),
    ]
    groups = {
        "base": [
            n
            for n in full
            if not n.startswith(
                (
                    "sm__ops_path",
                    "smsp__sass",
                    "breakdown:",
                    "dram__bytes.sum",
                    "lts__t_bytes",
                    "l1tex__t_bytes",
                    "sm__issue",
                    "sm__pipe_fma",
                    "sm__pipe_alu",
                    "l1tex__data",
                )
            )
        ],
    }
    groups["base+tensor_flops"] = groups["base"] + [n for n in full if n.startswith("sm__ops_path")]
    groups["base+sass_flops"] = groups["base"] + [n for n in full if n.startswith("smsp__sass")]
    groups["base+bytes"] = groups["base"] + [
        n for n in full if n.startswith(("dram__bytes.sum", "lts__t_bytes", "l1tex__t_bytes"))
    ]
    groups["base+pipes"] = groups["base"] + [
        n
        for n in full
        if n.startswith(("sm__issue", "sm__pipe_fma", "sm__pipe_alu", "l1tex__data"))
    ]
    groups["base+breakdown"] = groups["base"] + [n for n in full if n.startswith("breakdown:")]
    for name, names in groups.items():
        rows.append(run(f"passes_{name}", [ranges[0], *metrics(names)], 0, 1, work))
        rows[-1]["metrics"] = len(names)
    Path(args.json).write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("target")
    t.add_argument("--out", required=True)
    t.add_argument("--kernels", type=int, default=20)
    t.add_argument("--footprint-gb", type=float, default=0)
    t.add_argument("--elements", type=float, default=1e6)
    t.add_argument("--libs", action="store_true")
    t.add_argument("--empty-cache", action="store_true")
    d = sub.add_parser("drive")
    d.add_argument("--json", required=True)
    d.add_argument("--libs-only", action="store_true", help="only the runs with libraries")
    args = parser.parse_args()
    target(args) if args.mode == "target" else drive(args)


if __name__ == "__main__":
    main()
