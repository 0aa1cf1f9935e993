"""Do two ncu processes on one GPU capture faster than one? (issue 21's capture rows)

ncu lets one process profile a GPU at a time (a lock file per GPU); two on one GPU interleave
kernel by kernel. What could overlap is each one's work outside the lock: its target's Python,
input draws and warm-ups, and ncu's own host-side handling of a result. This captures a sample
of the scaled Wan shapes with one `capture --one-process`, then the same shapes as two shards
captured at once on the same GPU, then one process again (the run-to-run baseline), and
compares the wall times and what was measured: each shape's summed kernel time and each
kernel's sm_pct, two-at-once against one, beside one against one.

    python reports/speed/probe_two_ncu.py --every 17 --out $OUT
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCALED = Path("fixtures/shapes/wan14b_scaled_1000.yaml.xz")
CHILD = """
import sys
from pathlib import Path
from ncu_classify.capture.plan import CaptureOptions
from ncu_classify.capture.run import capture
k, n = (int(x) for x in sys.argv[3].split("/"))
m = capture(Path(sys.argv[1]), Path(sys.argv[2]), CaptureOptions(per_stage=False, shard=(k, n)))
print(sum(s.status == "ok" for s in m.shapes), "ok of", len(m.shapes))
"""


def sample(every: int, path: Path) -> int:
    """Every `every`-th shape of the scaled file, stages kept, written to `path`."""
    from ruamel.yaml import YAML

    yaml = YAML()
    with lzma.open(SCALED, "rt") as stream:
        doc = yaml.load(stream)
    kept, index = 0, 0
    for stage in list(doc["stages"]):
        shapes = doc["stages"][stage]
        chosen = [s for i, s in enumerate(shapes, start=index) if i % every == 0]
        index += len(shapes)
        if chosen:
            doc["stages"][stage] = chosen
            kept += len(chosen)
        else:
            del doc["stages"][stage]
    with path.open("w") as stream:
        yaml.dump(doc, stream)
    return kept


def run(shapes: Path, folders: list[Path]) -> float:
    """Capture `shapes` into each folder at once, one shard each; the wall seconds."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(shapes), str(f), f"{i}/{len(folders)}"])
        for i, f in enumerate(folders, start=1)
    ]
    codes = [p.wait() for p in procs]
    print("exit codes", codes, flush=True)
    return time.perf_counter() - start


def figures(folders: list[Path]) -> dict[str, tuple[float | None, list[float | None]]]:
    """Per group: its summed kernel us and its kernels' sm_pct, from the cards of `folders`."""
    from ncu_classify.verdicts.classify import classify
    from ncu_classify.verdicts.rules import load_rules

    cards = classify(folders, load_rules(), jobs=8)
    return {
        c.group: (c.summed_kernel_us, [k.metrics.get("sm_pct") for k in c.kernels])
        for c in cards.cards
        if c.status != "failed"
    }


def compare(base: dict, other: dict, label: str) -> dict:
    """Median and spread of other/base summed time, and of sm_pct differences, per group."""
    ratios, gaps = [], []
    for group, (us, pcts) in base.items():
        if group not in other or not us or not other[group][0]:
            continue
        ratios.append(other[group][0] / us)
        for a, b in zip(pcts, other[group][1], strict=False):
            if a is not None and b is not None:
                gaps.append(abs(b - a))
    ratios.sort()
    row = {
        "label": label,
        "groups": len(ratios),
        "time_ratio_median": statistics.median(ratios),
        "time_ratio_p5_p95": [ratios[len(ratios) // 20], ratios[-1 - len(ratios) // 20]],
        "sm_pct_gap_median": statistics.median(gaps),
        "sm_pct_gap_max": max(gaps),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=17)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/two_ncu"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    shapes = args.work / "shapes.yaml"
    print("shapes", sample(args.every, shapes), flush=True)
    walls = {}
    walls["one"] = run(shapes, [args.work / "one"])
    print("one", round(walls["one"], 1), flush=True)
    walls["two"] = run(shapes, [args.work / "two_1", args.work / "two_2"])
    print("two at once", round(walls["two"], 1), flush=True)
    walls["one_again"] = run(shapes, [args.work / "one_again"])
    print("one again", round(walls["one_again"], 1), flush=True)
    one = figures([args.work / "one"])
    rows = [
        compare(one, figures([args.work / "one_again"]), "one again / one"),
        compare(one, figures([args.work / "two_1", args.work / "two_2"]), "two at once / one"),
    ]
    (args.out / "two_ncu.json").write_text(json.dumps({"walls": walls, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
