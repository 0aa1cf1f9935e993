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
from ncu_classify.shapes import ShapeEntry, load_shapes  # noqa: E402


def run_tool(shapes: Path, out: Path, extra: list[str]) -> float:
    """Seconds one `ncu-classify capture` takes; stops the bench if capture itself failed
    (exit codes other than 0 and 5, a shape that failed)."""
    start = time.perf_counter()
    done = subprocess.run(
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
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 5):
        sys.exit(f"capture into {out} failed ({done.returncode}): {done.stderr.strip()}")
    return time.perf_counter() - start


def interleaved(entries: list[ShapeEntry]) -> list[tuple[int, ShapeEntry]]:
    """Shapes dealt round-robin over their stages, so a run cut short by its budget still
    holds every stage in about the workload's proportions."""
    stages: dict[str, list[tuple[int, ShapeEntry]]] = {}
    for index, entry in enumerate(entries):
        stages.setdefault(entry.stage, []).append((index, entry))
    order: list[tuple[int, ShapeEntry]] = []
    while any(stages.values()):
        for queue in stages.values():
            if queue:
                order.append(queue.pop(0))
    return order


def run_naive(shapes: Path, out: Path, budget: float) -> tuple[float, int]:
    """One `ncu --set full` per shape, each filtered to its NVTX range; no new shape is
    started once `budget` seconds (0: none) are spent. Returns (seconds, shapes run)."""
    file = load_shapes(shapes)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    done = 0
    for index, entry in interleaved(file.entries()):
        if budget and time.perf_counter() - start > budget:
            break
        done += 1
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
            "--export",
            str(out / f"shape{index:03d}"),
            "--force-overwrite",
            sys.executable,
            "-m",
            "ncu_classify.replay",
            str(batch),
            str(out / f"shape{index:03d}.status.jsonl"),
        ]
        began = time.perf_counter()
        subprocess.run(
            argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        print(f"  naive {entry.group}: {time.perf_counter() - began:.1f} s", flush=True)
    return time.perf_counter() - start, done


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


def passes(found: dict[str, tuple[str | None, int | None]]) -> list[int]:
    """The distinct replay-pass counts of a capture's dominant kernels."""
    return sorted({p for _, p in found.values() if p is not None})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=Path, default=ROOT / "fixtures/shapes/smoke.yaml")
    parser.add_argument("--work", type=Path, default=Path("/tmp/capture-bench"))
    parser.add_argument("--only", choices=["tool", "both"], default="both")
    parser.add_argument(
        "--capture-args", default="--one-process", help="extra `capture` options for the tool run"
    )
    parser.add_argument(
        "--naive-budget",
        type=float,
        default=0.0,
        help="seconds after which the naive run starts no new shape (0: run them all)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    shapes = len(load_shapes(args.shapes).entries())
    tool = run_tool(args.shapes, args.work / "tool", args.capture_args.split())
    print(f"{shapes} shapes: ncu-classify {tool:.1f} s ({tool / shapes:.2f} s/shape)", flush=True)
    if args.only == "tool":
        return
    naive, ran = run_naive(args.shapes, args.work / "naive", args.naive_budget)
    ratio = (naive / ran) / (tool / shapes)
    print(
        f"naive: {ran} of {shapes} shapes in {naive:.1f} s ({naive / ran:.2f} s/shape):"
        f" ncu-classify is {ratio:.2f}x faster per shape"
    )
    ours, theirs = verdicts(args.work / "tool"), verdicts(args.work / "naive")
    both = [g for g in ours if g in theirs]
    same = [g for g in both if ours[g][0] == theirs[g][0]]
    print(f"replay passes per kernel: ncu-classify {passes(ours)}, naive {passes(theirs)}")
    print(f"verdicts: {len(same)} of {len(both)} shapes captured by both agree")
    for group in both:
        if group not in same:
            print(f"  differs: {group}: {ours[group][0]} vs {theirs[group][0]}")
    if args.json:
        figures = {
            "shapes": shapes,
            "tool_s": round(tool, 2),
            "naive_s": round(naive, 2),
            "naive_shapes": ran,
            "ratio_per_shape": round(ratio, 2),
            "verdicts": {g: {"tool": ours[g][0], "naive": theirs[g][0]} for g in both},
        }
        args.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
