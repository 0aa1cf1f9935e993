"""Time `ncu-classify capture` against the naive way: one `ncu --set full` process per shape.

Both run the same replay (same inputs, warm-up outside the NVTX range) so that only the ncu
side differs. Prints seconds per shape for both, their ratio, the replay passes per kernel, and
whether the verdicts agree on the metrics both collect. Needs a GPU host with ncu.

    python bench/capture_speed.py --shapes fixtures/shapes/smoke.yaml --work /tmp/capture-bench
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncu_classify.classify import classify  # noqa: E402
from ncu_classify.ncu_cmd import nvtx_include  # noqa: E402
from ncu_classify.rules import load_rules  # noqa: E402
from ncu_classify.shapes import load_shapes  # noqa: E402


def run_tool(shapes: Path, out: Path, extra: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ncu_classify.cli",
            "capture",
            "--shapes",
            str(shapes),
            "-o",
            str(out),
            *extra,
        ],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def run_naive(shapes: Path, out: Path) -> float:
    """One `ncu --set full` per shape, each filtered to its NVTX range."""
    file = load_shapes(shapes)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for index, entry in enumerate(file.entries()):
        batch = out / f"shape{index:03d}.batch.json"
        batch.write_text(
            json.dumps(
                {
                    "seed": file.seed,
                    "warmup": file.warmup,
                    "cudnn_benchmark": file.cudnn_benchmark,
                    "entries": [entry.model_dump(mode="json", by_alias=True)],
                }
            )
        )
        argv = [
            "ncu",
            "--config-file",
            "off",
            "--clock-control",
            "none",
            "--set",
            "full",
            "--nvtx",
            "--nvtx-include",
            nvtx_include(entry.group),
            "-o",
            str(out / f"shape{index:03d}"),
            "--force-overwrite",
            sys.executable,
            "-m",
            "ncu_classify.replay",
            str(batch),
            str(out / f"shape{index:03d}.status.jsonl"),
        ]
        subprocess.run(
            argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
    return time.perf_counter() - start


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def verdicts(folder: Path) -> dict[str, tuple[str | None, int | None]]:
    """Per NVTX range: the dominant kernel's class and its replay passes."""
    out = {}
    for card in classify([*sorted(folder.glob("*.ncu-rep"))], load_rules(), jobs=4).cards:
        top = max(card.kernels, key=lambda k: k.metrics.get("dur_us") or 0.0, default=None)
        if top is not None and top.nvtx_range:
            out[top.nvtx_range] = (top.classification, top.replay_passes)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=Path, default=ROOT / "fixtures/shapes/smoke.yaml")
    parser.add_argument("--work", type=Path, default=Path("/tmp/capture-bench"))
    parser.add_argument("--only", choices=["tool", "both"], default="both")
    parser.add_argument(
        "--capture-args", default="--one-process", help="extra `capture` options for the tool run"
    )
    args = parser.parse_args()
    shapes = len(load_shapes(args.shapes).entries())
    tool = run_tool(args.shapes, args.work / "tool", args.capture_args.split())
    if args.only == "tool":
        print(f"{shapes} shapes: ncu-classify {tool:.1f} s ({tool / shapes:.2f} s/shape)")
        return
    naive = run_naive(args.shapes, args.work / "naive")
    print(
        f"{shapes} shapes: ncu-classify {tool:.1f} s ({tool / shapes:.2f} s/shape), naive"
        f" {naive:.1f} s ({naive / shapes:.2f} s/shape): {naive / tool:.2f}x faster"
    )
    ours, theirs = verdicts(args.work / "tool"), verdicts(args.work / "naive")
    same = [g for g in ours if g in theirs and ours[g][0] == theirs[g][0]]
    print(
        f"replay passes per kernel: ncu-classify {sorted({p for _, p in ours.values()})},"
        f" naive {sorted({p for _, p in theirs.values()})}"
    )
    print(f"verdicts: {len(same)} of {len(ours)} shapes agree")
    for group in ours:
        if group not in same:
            print(f"  differs: {group}: {ours[group][0]} vs {theirs.get(group, (None,))[0]}")


if __name__ == "__main__":
    main()
