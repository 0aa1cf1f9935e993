"""Where a capture's replay time goes outside ncu: run the replay target of a shapes file with
no profiler and sum its per-shape phases (inputs: draw, hash, copy; warm-up; measured launches)
by op. Under ncu the manifest's `replay_phases` give the same split with ncu's work inside
`measured`. Run on the GPU host from the repository root:

    python3 reports/speed/replay_phases.py SHAPES.yaml --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.replay.protocol import BatchFile, write_batch  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", type=Path)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    shapes = load_shapes(args.shapes)
    work = Path(tempfile.mkdtemp())
    batch = BatchFile(
        seed=shapes.seed,
        warmup=shapes.warmup,
        cudnn_benchmark=shapes.cudnn_benchmark,
        entries=shapes.entries(),
    )
    write_batch(work / "batch.json", batch)
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ncu_classify.replay",
            str(work / "batch.json"),
            str(work / "status.jsonl"),
        ],
        check=False,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    lines = [json.loads(x) for x in (work / "status.jsonl").read_text().splitlines()]
    shape_lines = [x for x in lines if x.get("kind") == "shape"]
    by_op: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in shape_lines:
        op = line["group"].split(":")[1].split(".")[0]
        op = "aten" if op == "aten" else op
        by_op[op]["shapes"] += 1
        by_op[op]["seconds"] += line.get("seconds") or 0
        for phase, value in (line.get("phases") or {}).items():
            by_op[op][phase] += value
    top = sorted(shape_lines, key=lambda x: -(x.get("seconds") or 0))[:12]
    result = {
        "shapes": len(shape_lines),
        "wall_s": round(wall, 2),
        "sum_shape_s": round(sum(x.get("seconds") or 0 for x in shape_lines), 2),
        "failed": [x["group"] for x in shape_lines if x["status"] != "ok"],
        "by_op": {op: {k: round(v, 3) for k, v in d.items()} for op, d in sorted(by_op.items())},
        "top": [
            {"group": x["group"], "seconds": x.get("seconds"), **(x.get("phases") or {})}
            for x in top
        ],
    }
    args.json.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result[k] for k in ("shapes", "wall_s", "sum_shape_s", "by_op")}))


if __name__ == "__main__":
    main()
