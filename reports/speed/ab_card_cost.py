"""A/B of the tool's own cost per kernel beyond the read (kernel card and its JSON), versions in
turn, one fresh process per figure: each argument ROOT:LABEL names a folder holding an
`ncu_classify` package (this checkout: `.`). Each process reads the report once, then builds
every kernel's card `--reps` times, then its card and JSON as the readers make them; it prints
the best pass of each in microseconds per kernel.

    python reports/speed/ab_card_cost.py REPORT .abA:before .:now --rounds 5
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys, time, json
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from ncu_classify.read.kernels import read_report
from ncu_classify.verdicts.judge import kernel_card
from ncu_classify.verdicts.rules import load_rules
rules = load_rules()
records = read_report(Path(sys.argv[2])).kernels
try:  # the card and its JSON as this version's readers make them
    from ncu_classify.verdicts.classify import _card_and_json
except ImportError:
    def _card_and_json(record, rules):
        card = kernel_card(record, rules)
        return card, card.model_dump_json(exclude_unset=True)
best_card = best_both = float("inf")
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    cards = [kernel_card(r, rules) for r in records]
    middle = time.perf_counter()
    texts = [_card_and_json(r, rules)[1] for r in records]
    end = time.perf_counter()
    best_card, best_both = min(best_card, middle - start), min(best_both, end - middle)
print(json.dumps({"kernels": len(records), "card_us": best_card / len(records) * 1e6,
                  "card_json_us": best_both / len(records) * 1e6, "bytes": sum(map(len, texts))}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        report = args.report
        if report.suffix == ".xz":
            report = Path(scratch) / report.stem
            with lzma.open(args.report) as src, report.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        rows: dict[str, list[dict]] = {v: [] for v in args.versions}
        for _ in range(args.rounds):
            for version in args.versions:
                root = version.split(":")[0]
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, root, str(report), str(args.reps)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                rows[version].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"{args.report.name}: best of {args.reps} passes per process, {args.rounds} processes each"
    )
    for version, got in rows.items():
        card = [r["card_us"] for r in got]
        both = [r["card_json_us"] for r in got]
        print(
            f"{version:>16}  {got[0]['kernels']} kernels, {got[0]['bytes']} bytes of JSON;"
            f" card {min(card):.1f} us (median {statistics.median(card):.1f}),"
            f" card + JSON {min(both):.1f} us (median {statistics.median(both):.1f})"
        )


if __name__ == "__main__":
    main()
