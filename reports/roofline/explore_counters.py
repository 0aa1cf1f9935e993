"""Which roofline counters exist on the H200 and what they cost: run on the GPU host.

Profiles four kernels' shapes (bf16 GEMM 4096^3, NCDHW fp32/TF32 conv3d, cuDNN SDPA, depthwise
fp32 conv3d) once each inside NVTX ranges with the card metrics plus the roofline counters and
the throughput breakdowns, and writes the report; `ncu --query-metrics` lists are saved beside.

    python reports/roofline/explore_counters.py OUT_DIR
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FAMILIES = ("hgmma", "hmma")
TYPES = ("bf16_dst_fp32", "fp16_dst_fp32", "fp16_dst_fp16", "tf32_dst_fp32")
COUNTERS = [
    f"sm__ops_path_tensor_op_{f}_src_{t}_sparsity_off.sum" for f in FAMILIES for t in TYPES
] + [
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "dram__bytes.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
]
CLOCKS = [
    "dram__cycles_elapsed.avg.per_second",
    "lts__cycles_elapsed.avg.per_second",
    "l1tex__cycles_elapsed.avg.per_second",
]
BREAKDOWNS = [
    "breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
]

TARGET = r"""
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.backends.cudnn.allow_tf32 = True
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
x = torch.randn(1, 384, 4, 122, 54, device="cuda")
w = torch.randn(384, 384, 3, 3, 3, device="cuda")
q = torch.randn(1, 40, 4680, 128, device="cuda", dtype=torch.bfloat16)
dx = torch.randn(1, 384, 6, 122, 54, device="cuda")
dw = torch.randn(384, 1, 3, 3, 3, device="cuda")
ops = {
  "gemm": lambda: a @ a,
  "conv": lambda: F.conv3d(x, w),
  "sdpa": lambda: F.scaled_dot_product_attention(q, q, q),
  "dwconv": lambda: F.conv3d(dx, dw, groups=384),
}
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for name, op in ops.items():
        for _ in range(3): op()
        torch.cuda.synchronize(); torch.cuda.nvtx.range_push(name); op()
        torch.cuda.synchronize(); torch.cuda.nvtx.range_pop()
"""


def main(out: Path) -> None:
    from ncu_classify.capture.ncu_cmd import ncu_argv
    from ncu_classify.core.metrics import capture_metric_names

    out.mkdir(parents=True, exist_ok=True)
    for mode in ("base", "suffix"):
        with (out / f"query_metrics_{mode}.txt").open("w") as handle:
            subprocess.run(
                ["ncu", "--query-metrics", "--query-metrics-mode", mode, "--chip", "gh100"],
                stdout=handle,
                stderr=subprocess.STDOUT,
                check=False,
            )
    (out / "target.py").write_text(TARGET)
    card = capture_metric_names()
    peaks = [f"{c}.peak_sustained" for c in COUNTERS]
    lists = {
        "card": card,
        "roofline": card + COUNTERS + peaks + CLOCKS,
        "full": card + COUNTERS + peaks + CLOCKS + BREAKDOWNS,
    }
    for name, metrics in lists.items():
        argv = ncu_argv(  # (run on 2026-11-30 without --target-processes all: one process)
            ncu="ncu",
            report_stem=out / name,
            metrics=metrics,
            groups=["gemm", "conv", "sdpa", "dwconv"],
            target=[sys.executable, str(out / "target.py")],
        )
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        (out / f"{name}.log").write_text(done.stdout + done.stderr)
        print(name, "exit", done.returncode, flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
