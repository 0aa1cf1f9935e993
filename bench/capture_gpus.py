"""Time `ncu-classify capture` on one GPU against several GPUs of the same host.

For each shapes file: one capture with `--gpus 0`, one with all the GPUs given, both with the
same other options. Prints the wall time of each, the speed-up, each GPU's busy time (from the
manifest's batch records) and whether the verdicts of the two captures agree. Needs a host with
ncu and at least two GPUs.

    python bench/capture_gpus.py fixtures/shapes/workload_480x832.yaml --gpus 0,1
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_speed import metric_spread, print_differences, run_tool, verdicts

from ncu_classify.capture.manifest import read_manifest
from ncu_classify.shapes.file import load_shapes


def busy_seconds(folder: Path) -> dict[str, float]:
    """Seconds each GPU spent running ncu batches, from the capture's manifest."""
    busy: dict[str, float] = {}
    for batch in read_manifest(folder / "manifest.json").batches:
        key = str(batch.gpu)
        busy[key] = round(busy.get(key, 0.0) + (batch.wall_seconds or 0.0), 1)
    return busy


def compare(shapes: Path, work: Path, gpus: str, extra: list[str]) -> dict[str, Any]:
    """Capture `shapes` on GPU 0 alone and on `gpus`; return the figures of both."""
    count = len(load_shapes(shapes).entries())
    one_dir, many_dir = work / "gpu0", work / f"gpus{gpus.replace(',', '_')}"
    one = run_tool(shapes, one_dir, ["--gpus", "0", *extra])
    many = run_tool(shapes, many_dir, ["--gpus", gpus, *extra])
    ours, theirs = verdicts(one_dir), verdicts(many_dir)
    differs = print_differences(ours, theirs, f"GPU 0 vs GPUs {gpus}")
    return {
        "shapes_file": shapes.name,
        "shapes": count,
        "one_gpu_s": round(one, 1),
        "many_gpus_s": round(many, 1),
        "speedup": round(one / many, 2),
        "busy_one": busy_seconds(one_dir),
        "busy_many": busy_seconds(many_dir),
        "metric_spread": metric_spread(ours, theirs),
        "differs": differs,
        "verdicts_agree": len(ours) - len(differs),
        "verdicts_compared": len(ours),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", type=Path, nargs="+")
    parser.add_argument("--gpus", default="0,1")
    parser.add_argument("--work", type=Path, default=Path("/tmp/capture-gpus"))
    parser.add_argument("--capture-args", default="--one-process")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    results = []
    for shapes in args.shapes:
        print(f"{shapes.name}:", flush=True)
        figures = compare(shapes, args.work / shapes.stem, args.gpus, args.capture_args.split())
        results.append(figures)
        print(
            f"  {figures['shapes']} shapes, GPU 0 {figures['one_gpu_s']} s,"
            f" GPUs {args.gpus} {figures['many_gpus_s']} s ({figures['speedup']}x);"
            f" busy per GPU {figures['busy_many']}; verdicts agree on"
            f" {figures['verdicts_agree']} of {figures['verdicts_compared']}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
