"""A/B of classify versions in one run, fresh process per figure, the versions in turn: each
argument ROOT:LABEL names a folder holding an `ncu_classify` package (this checkout: `.`).

    python reports/speed/ab_stream.py REPORTS_FOLDER --jobs 1,16 --rounds 5 .abA:before .:now
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import sys, time, json
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from ncu_classify.cards.files import card_file_text
from ncu_classify.read.preload import start_loading
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules
try:  # the kernel cards' JSON made by the readers, where this version can
    from ncu_classify.cards.files import KernelJson
    made = KernelJson()
    given = {"kernel_json": made}
except ImportError:
    made, given = None, {}
start = time.perf_counter()
start_loading()
cards = classify([Path(sys.argv[2])], load_rules(), jobs=int(sys.argv[3]), **given)
text = card_file_text(cards, made) if made is not None else card_file_text(cards)
print(json.dumps({"seconds": time.perf_counter() - start, "bytes": len(text)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports")
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--jobs", default="1,16")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for jobs in args.jobs.split(","):
        times: dict[str, list[float]] = {v.split(":")[1]: [] for v in args.versions}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for version in args.versions:
                root, label = version.split(":")
                argv = [sys.executable, "-c", CHILD, root, args.reports, jobs]
                done = subprocess.run(argv, capture_output=True, text=True, check=True)
                run = json.loads(done.stdout.strip().splitlines()[-1])
                times[label].append(run["seconds"])
                sizes[label] = run["bytes"]
        for label, seen in times.items():
            ordered = " ".join(f"{t:.3f}" for t in sorted(seen))
            best = min(seen)
            print(f"jobs {jobs:>2} {label:>8}: best {best:.3f} s  ({ordered})  {sizes[label]} B")


if __name__ == "__main__":
    main()
