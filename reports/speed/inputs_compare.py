"""Cards of the same shapes captured with torch's CPU draws (the committed Wan 14B cards) and with
the hashed GPU draws (the H200 run of this issue): per shape the summed kernel time and primary
class of each, and the median ratio; written as CSV, summary on stdout.

    python3 reports/speed/inputs_compare.py OLD_CARDS.json NEW_CARDS.json[.xz] > OUT.csv
"""

from __future__ import annotations

import csv
import json
import lzma
import statistics
import sys
from pathlib import Path


def cards(path: Path) -> dict[str, dict]:
    """Cards by group id, from a plain or xz-compressed cards file."""
    raw = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    return {c["group"]: c for c in json.loads(raw)["cards"]}


def main() -> None:
    old, new = cards(Path(sys.argv[1])), cards(Path(sys.argv[2]))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(
        ["group", "cpu_draws_us", "hashed_draws_us", "ratio", "cpu_primary", "hashed_primary"]
    )
    ratios, flips = [], 0
    for group in sorted(old.keys() & new.keys()):
        a, b = old[group]["summed_kernel_us"], new[group]["summed_kernel_us"]
        ratio = b / a if a and b else None
        ratios += [ratio] if ratio else []
        flips += old[group]["primary"] != new[group]["primary"]
        out.writerow(
            [
                group,
                a,
                b,
                f"{ratio:.4f}" if ratio else "",
                old[group]["primary"],
                new[group]["primary"],
            ]
        )
    print(
        f"{len(ratios)} shapes: median ratio {statistics.median(ratios):.4f}, range"
        f" {min(ratios):.3f}-{max(ratios):.3f}; {flips} primary classes differ",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
