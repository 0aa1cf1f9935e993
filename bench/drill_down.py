"""Time drill-down captures (`capture --drill-down CARDS --one-process`) and count the replay
passes of every drilled kernel; the issue's goal is under 1 minute for both workload resolutions
on one H200, and at most 20 passes per kernel. Needs a GPU host with ncu.

    python bench/drill_down.py --out /tmp/drill \\
        480x832=fixtures/shapes/workload_480x832.yaml:reports/drill/cards_480x832_roofline.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncu_classify.read.kernels import read_report  # noqa: E402


def drill(name: str, shapes: str, cards: str, out: Path) -> dict[str, object]:
    """One drill-down capture: seconds, shapes, kernels, passes per kernel (min, max)."""
    folder = out / name
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ncu_classify", "capture", "--shapes", shapes, "-o", str(folder),
         "--drill-down", cards, "--one-process"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    manifest = json.loads((folder / "manifest.json").read_text())
    passes = [
        k.replay_passes or 0
        for report in sorted(folder.glob("*.ncu-rep"))
        for k in read_report(report).kernels
    ]
    return {
        "name": name,
        "exit_code": done.returncode,
        "seconds": round(seconds, 1),
        "shapes": len(manifest["shapes"]),
        "ok": sum(s["status"] == "ok" for s in manifest["shapes"]),
        "kernels": len(passes),
        "passes_min": min(passes, default=None),
        "passes_max": max(passes, default=None),
        "stderr_tail": done.stderr.strip().splitlines()[-3:],
    }


def main() -> None:
    """Run each NAME=SHAPES:CARDS drill-down in turn and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("runs", nargs="+", help="NAME=SHAPES:CARDS")
    args = parser.parse_args()
    results = []
    for run in args.runs:
        name, rest = run.split("=", 1)
        shapes, cards = rest.split(":", 1)
        results.append(drill(name, shapes, cards, args.out))
        print(json.dumps(results[-1]), flush=True)
    total = sum(float(r["seconds"]) for r in results)  # type: ignore[arg-type]
    print(json.dumps({"total_seconds": round(total, 1)}))


if __name__ == "__main__":
    main()
