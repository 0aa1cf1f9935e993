"""`try` timed: the top moves of one stage measured on the GPU host, wall time in all and per
phase (the capture's ncu processes from its manifest, the rest: planning, classify, results).
The goal (issue 39): the alternatives of the top 10 moves of one stage in under 3 minutes on
one H200. Needs a GPU host with ncu.

    python bench/try_speed.py CARDS SHAPES --stage vae --top 10 --repeat 5 --work /tmp/try
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cards")
    parser.add_argument("shapes")
    parser.add_argument("--stage", required=True)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    out = args.work / f"try_{args.stage}"
    argv = [sys.executable, "-m", "ncu_classify", "try", args.cards, "--shapes", args.shapes,
            "-o", str(out), "--stage", args.stage, "--top", str(args.top),
            "--repeat", str(args.repeat)]  # fmt: skip
    start = time.perf_counter()
    code = subprocess.run(argv, check=False, stdout=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - start
    manifest = json.loads((out / "raw" / "manifest.json").read_text())
    ncu = sum(b.get("wall_seconds") or 0.0 for b in manifest["batches"])
    plan = json.loads((out / "plan.json").read_text())
    shapes = sum(len(m["tries"]) for m in plan["moves"])
    print(f"try --stage {args.stage} --top {args.top} --repeat {args.repeat}: exit {code},"
          f" {len(plan['moves'])} moves, {shapes} shapes, {wall:.1f} s in all"
          f" ({ncu:.1f} s in ncu processes, {wall - ncu:.1f} s planning, classify, results);"
          f" goal: under 180 s")  # fmt: skip
    return code


if __name__ == "__main__":
    raise SystemExit(main())
