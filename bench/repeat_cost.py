"""What `capture --repeat N` costs: a single capture and a repeated one of the same shapes file,
side by side in one run on one GPU, both `--one-process`; the issue's goal is at most 1.3x for
`--repeat 5` when only durations repeat. Also times the ncu processes of each (the counters
batch, the duration-only one) from the manifests. Needs a GPU host with ncu.

    python bench/repeat_cost.py --shapes fixtures/shapes/workload_480x832.yaml --out /tmp/rep \\
        --repeat 5 [--order repeat-first]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def capture(shapes: str, folder: Path, extra: list[str]) -> dict[str, object]:
    """One capture: wall seconds, shapes ok, and each ncu process's seconds by kind."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ncu_classify", "capture", "--shapes", shapes, "-o", str(folder),
         "--one-process", *extra],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        "folder": str(folder),
        "exit_code": done.returncode,
        "seconds": round(seconds, 1),
        "shapes_ok": sum(s["status"] == "ok" for s in manifest["shapes"]),
        "timed_ok": sum(s.get("times_status") == "ok" for s in manifest["shapes"]),
        "batches": [
            {"name": b["name"], "kind": b.get("kind", "counters"), "seconds": b["wall_seconds"]}
            for b in manifest["batches"]
        ],
        "stderr_tail": done.stderr.strip().splitlines()[-2:],
    }


def main() -> None:
    """Single and repeated capture in the order asked; prints both and the ratio as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--order", choices=("single-first", "repeat-first"), default="single-first")
    args = parser.parse_args()
    runs = [("single", []), ("repeat", ["--repeat", str(args.repeat)])]
    if args.order == "repeat-first":
        runs.reverse()
    results = {name: capture(args.shapes, args.out / name, extra) for name, extra in runs}
    ratio = results["repeat"]["seconds"] / results["single"]["seconds"]  # type: ignore[operator]
    print(json.dumps({**results, "repeat": args.repeat, "ratio": round(ratio, 3)}, indent=2))
    print(f"--repeat {args.repeat}: {ratio:.2f}x the single capture (goal <= 1.3x)")


if __name__ == "__main__":
    main()
