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
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncu_classify.capture.ncu_cmd import nvtx_include  # noqa: E402
from ncu_classify.replay.protocol import BatchFile, write_batch  # noqa: E402
from ncu_classify.shapes.file import ShapeEntry, load_shapes  # noqa: E402
from ncu_classify.verdicts.classify import classify  # noqa: E402
from ncu_classify.verdicts.rules import load_rules  # noqa: E402


def run_tool(shapes: Path, out: Path, extra: list[str]) -> float:
    """Seconds one `ncu-classify capture` takes; stops the bench if capture itself failed
    (exit codes other than 0 and 5, a shape that failed)."""
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncu_classify",
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
        write_batch(
            batch,
            BatchFile(
                seed=file.seed,
                warmup=file.warmup,
                cudnn_benchmark=file.cudnn_benchmark,
                entries=[entry],
            ),
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


class Dominant(NamedTuple):
    """The longest kernel of one NVTX range: its class, replay passes and card metrics."""

    classification: str | None
    passes: int | None
    metrics: dict[str, float | None]


COMPARED = ("sm_pct", "tensor_pct", "dram_pct", "l2_pct", "warps_active_pct", "dur_us")


def verdicts(folder: Path) -> dict[str, Dominant]:
    """Per NVTX range: the dominant kernel's class, replay passes and metrics."""
    out = {}
    for card in classify([*sorted(folder.glob("*.ncu-rep"))], load_rules(), jobs=4).cards:
        top = max(card.kernels, key=lambda k: k.metrics.get("dur_us") or 0.0, default=None)
        if top is not None and top.nvtx_range:
            out[top.nvtx_range] = Dominant(top.classification, top.replay_passes, top.metrics)
    return out


def passes(found: dict[str, Dominant]) -> list[int]:
    """The distinct replay-pass counts of a capture's dominant kernels."""
    return sorted({d.passes for d in found.values() if d.passes is not None})


def metric_spread(a: dict[str, Dominant], b: dict[str, Dominant]) -> dict[str, dict[str, Any]]:
    """How far two captures' dominant kernels are apart, per metric over the shapes both hold:
    median and largest difference (percentage points; for dur_us, percent of the first), and
    the shape with the largest one."""
    spread = {}
    for name in COMPARED:
        gaps = []
        for group in sorted(a.keys() & b.keys()):
            x, y = a[group].metrics.get(name), b[group].metrics.get(name)
            if x is not None and y is not None:
                gap = abs(y - x) / x * 100 if name == "dur_us" and x else abs(y - x)
                gaps.append((gap, group))
        if gaps:
            largest = max(gaps)
            spread[name] = {
                "median": round(statistics.median(g for g, _ in gaps), 2),
                "max": round(largest[0], 2),
                "max_at": largest[1],
            }
    return spread


def print_differences(a: dict[str, Dominant], b: dict[str, Dominant], labels: str) -> list[str]:
    """Print the metric spread and each shape whose verdicts differ; return those shapes."""
    for name, gap in metric_spread(a, b).items():
        print(
            f"  {name}: median gap {gap['median']}, largest {gap['max']} at {gap['max_at']}"
            f" ({labels})"
        )
    differs = sorted(g for g in a.keys() & b.keys() if a[g].classification != b[g].classification)
    for group in differs:
        shown = {
            m: [_round(a[group].metrics.get(m)), _round(b[group].metrics.get(m))] for m in COMPARED
        }
        print(
            f"  differs: {group}: {a[group].classification} vs {b[group].classification}; {shown}"
        )
    return differs


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


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
    both = sorted(ours.keys() & theirs.keys())
    print(f"replay passes per kernel: ncu-classify {passes(ours)}, naive {passes(theirs)}")
    differs = print_differences(ours, theirs, "tool vs naive")
    print(f"verdicts: {len(both) - len(differs)} of {len(both)} shapes captured by both agree")
    if args.json:
        figures = {
            "shapes": shapes,
            "tool_s": round(tool, 2),
            "naive_s": round(naive, 2),
            "naive_shapes": ran,
            "ratio_per_shape": round(ratio, 2),
            "metric_spread": metric_spread(ours, theirs),
            "verdicts": {
                g: {"tool": ours[g].classification, "naive": theirs[g].classification} for g in both
            },
        }
        args.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
