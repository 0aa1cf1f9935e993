"""Probe: how many kernel-replay passes each group of capture's metrics costs (issue 21).

ncu's pass count depends on which counters a list asks for, not on the kernel, so a tiny
kernel (a CUDA program built with nvcc there, no torch: ~2 s per ncu run) is
profiled once per metric list: each group alone, and the whole capture list without each
group (the passes that group alone adds). Run on the GPU host from the repository root:

    python3 reports/speed/probe_passes.py --json $OUT/passes.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.capture.ncu_cmd import FIXED_OPTIONS  # noqa: E402

KERNEL = r"""
__global__ void k(float *p) { p[threadIdx.x] += 1.0f; }
int main() {
  float *p;
  cudaMalloc(&p, 4096);
  k<<<1, 32>>>(p);
  return cudaDeviceSynchronize() != cudaSuccess;
}
"""


def build(work: Path) -> list[str]:
    """The target's argv: a one-warp CUDA program built with nvcc (no torch: ~2 s per ncu run),
    else a torch launch of the same size."""
    source = work / "k.cu"
    source.write_text(KERNEL)
    built = subprocess.run(
        ["nvcc", "-arch=sm_90", "-o", str(work / "k"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode == 0:
        return [str(work / "k")]
    print("nvcc failed, torch target:", built.stderr[-300:], flush=True)
    return [sys.executable, __file__, "target"]


def target() -> None:
    """Fallback: one small torch kernel."""
    import torch

    x = torch.zeros(32, device="cuda")
    x.add_(1)
    torch.cuda.synchronize()


def passes(names: list[str], work: Path, tag: str, argv: list[str]) -> int | str:
    """Replay passes ncu needs for `names` (read from the report), or the error."""
    report = work / tag
    cmd = [
        "ncu",
        *FIXED_OPTIONS,
        "-c",
        "1",
        "--metrics",
        ",".join(names),
        "--export",
        str(report),
        "--force-overwrite",
        *argv,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return (done.stderr or done.stdout)[-300:]
    import ncu_report  # type: ignore[import-not-found]

    action = ncu_report.load_report(f"{report}.ncu-rep").range_by_idx(0).action_by_idx(0)
    return int(action.metric_by_name("profiler__replayer_passes").as_uint64())


def groups(full: list[str]) -> dict[str, list[str]]:
    """Capture's metric list cut into the groups a card figure comes from."""
    prefixes = {
        "duration": ("gpu__time_duration",),
        "sm_throughput": ("sm__throughput",),
        "l2_throughput": ("lts__throughput",),
        "dram_throughput": ("dram__throughput",),
        "tensor_pipe": ("sm__pipe_tensor_op_hmma_cycles_active",),
        "warps": ("sm__warps_active", "sm__maximum_warps"),
        "l2_hit": ("lts__t_sector_hit_rate",),
        "cycles": ("sm__cycles_active", "sm__cycles_elapsed", "gpc__cycles"),
        "dram_rw_bytes": ("dram__bytes_read", "dram__bytes_write"),
        "tensor_flops": ("sm__ops_path_tensor",),
        "sass_flops": ("smsp__sass_thread_inst",),
        "pipes": ("sm__issue_active", "sm__pipe_fma", "sm__pipe_alu", "l1tex__data_pipe"),
        "bytes": (
            "dram__bytes.sum",
            "dram__cycles",
            "lts__t_bytes",
            "lts__cycles",
            "l1tex__t_bytes",
            "l1tex__cycles",
        ),
        "breakdown": ("breakdown:",),
    }
    return {name: [n for n in full if n.startswith(p)] for name, p in prefixes.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="drive")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.mode == "target":
        target()
        return
    from ncu_classify.capture.drill import capture_metrics

    full = capture_metrics(None)
    work = Path(tempfile.mkdtemp())
    argv = build(work)
    result: dict[str, object] = {"full": passes(full, work, "full", argv)}
    print("full", result["full"], flush=True)
    for name, names in groups(full).items():
        rest = [n for n in full if n not in names]
        row = {
            "metrics": names,
            "alone": passes(names, work, f"{name}_alone", argv),
            "full_without": passes(rest, work, f"{name}_without", argv),
        }
        result[name] = row
        print(name, row["alone"], row["full_without"], flush=True)
    Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
