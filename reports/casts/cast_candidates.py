"""Which output cast did the legacy pipeline run? Candidates profiled on the GPU host.

The legacy 480x832 output cards keep only evidence of their one kernel: an
`unrolled_elementwise_kernel` (not the vectorized one a contiguous cast uses) at 9.97 and 13.3
waves, 29.8 and 39.6 us, DRAM 33.8 % and 36.3 % of peak. Each candidate cast of a
[1, 3, T, 480, 832] video (T = 9 and 12 frames; dtypes, contiguous or permuted to channels-last
frames) runs once inside an NVTX range named after it under ncu, which records the kernel name,
grid, waves, duration and DRAM bytes of each.

    python reports/casts/cast_candidates.py OUT_DIR      # on the GPU host
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TARGET = r"""
import torch
dt = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16, "u8": torch.uint8}
cases = []
for frames in (9, 12):
    for src, dst in (("bf16", "u8"), ("fp32", "u8"), ("fp32", "bf16"), ("bf16", "fp32")):
        for layout in ("contig", "perm"):
            cases.append((frames, src, dst, layout))
for frames, src, dst, layout in cases:
    x = torch.randn(1, 3, frames, 480, 832, device="cuda").to(dt[src])
    view = x.permute(0, 2, 3, 4, 1) if layout == "perm" else x
    op = lambda: view.to(dt[dst])
    for _ in range(3): op()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(f"T{frames}_{src}_{dst}_{layout}")
    op(); torch.cuda.synchronize(); torch.cuda.nvtx.range_pop()
"""
METRICS = [
    "gpu__time_duration.sum", "launch__grid_size", "launch__block_size",
    "launch__waves_per_multiprocessor", "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
]  # fmt: skip


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "target.py").write_text(TARGET)
    argv = [
        *("ncu", "--config-file", "off", "--clock-control", "none", "--nvtx"),
        *("--nvtx-include", "regex:T.*/", "--metrics", ",".join(METRICS)),
        *("--csv", "--page", "raw", "--print-units", "base"),
        *(sys.executable, str(out / "target.py")),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    (out / "casts.csv").write_text(done.stdout)
    (out / "casts.log").write_text(done.stderr)
    print("ncu exit", done.returncode)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
