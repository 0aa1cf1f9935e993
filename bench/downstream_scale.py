"""Time the downstream commands (`summary`, `diff`, `report`) and `load_cards` on large cards
files, side by side with `json.load` of the same file, to show that they grow linearly and stay
within a small multiple of reading the JSON (issue 21, requirement 3).

The files are real H200 cards copied under new stage and group names (`bench/scale_inputs.py`
says how; ~392 kernels a copy); the diff's candidate is a second file with a few numbers changed.
`json.load` and `load_cards` are timed in this process (they are library calls); every command
is timed as the user runs it, as a fresh `ncu-classify` subprocess writing to a file (interpreter
start and imports included: `start` is that cost alone, `ncu-classify --version`). The HTML
report is then opened in headless Chromium (skipped with a message when none is found): wall
seconds to its load event, and the page's own DOMContentLoaded and load figures.

    python bench/downstream_scale.py [--kernels 10000,30000,100000] [--json FILE]

Prints per size and step the seconds, seconds per 1,000 kernels and the ratio to `json.load`,
the output sizes, and flags a step whose time per kernel grows more than 1.5x from the smallest
to the largest size (not linear).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_inputs import base_doc, build, find_chromium, kernels_of, page_load  # noqa: E402

from ncu_classify.present.frames import load_cards  # noqa: E402

NOT_LINEAR = 1.5


def commands(a: Path, b: Path, out: Path) -> dict[str, list[str]]:
    """The CLI runs timed per size: name -> arguments after `ncu-classify`."""
    return {
        "summary": ["summary", str(a), "-o", str(out / "stage.txt")],
        "summary --by kernel": ["summary", str(a), "--by", "kernel", "-o", str(out / "k.txt")],
        "summary --by shape --csv": ["summary", str(a), "--by", "shape", "-o", str(out / "s.csv")],
        "summary --by coverage": ["summary", str(a), "--by", "coverage", "-o", str(out / "c.txt")],
        "summary --by fidelity": ["summary", str(a), "--by", "fidelity", "-o", str(out / "f.txt")],
        "diff": ["diff", str(a), str(b), "-o", str(out / "diff.txt")],
        "diff --format json": ["diff", str(a), str(b), "-o", str(out / "diff.json")],
        "report html": ["report", str(a), "-o", str(out / "report.html")],
        "report md": ["report", str(a), "-o", str(out / "report.md")],
    }


OUTPUTS = {
    "diff --format json": "diff.json",
    "report html": "report.html",
    "report md": "report.md",
}


def cli(args: list[str]) -> float:
    """Wall seconds of one `ncu-classify` run (a fresh process, as a user runs it)."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": "0", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "ncu_classify", *args]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 8):
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def timed(step: Any) -> float:
    """Wall seconds of one in-process call (collected garbage first)."""
    gc.collect()
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def measure(copies: int, folder: Path, browser: str | None) -> dict[str, Any]:
    """Every figure for one size: build the two files, time each step, open the page."""
    doc = base_doc()
    a, b = folder / f"a{copies}.json", folder / f"b{copies}.json"
    a.write_text(build(doc, copies, 0), encoding="utf-8")
    b.write_text(build(doc, copies, 1), encoding="utf-8")
    kernels = kernels_of(doc) * copies
    out = folder / f"out{copies}"
    out.mkdir()

    def read_json() -> None:
        with a.open(encoding="utf-8") as fh:
            json.load(fh)

    seconds = {"json.load": timed(read_json)}
    seconds["load_cards card"] = timed(lambda: load_cards(a))
    seconds["load_cards kernel"] = timed(lambda: load_cards(a, level="kernel"))
    gc.collect()
    for name, args in commands(a, b, out).items():
        seconds[name] = cli(args)
    sizes = {name: (out / file).stat().st_size for name, file in OUTPUTS.items()}
    row: dict[str, Any] = {
        "kernels": kernels,
        "cards": len(doc["cards"]) * copies,
        "file_bytes": a.stat().st_size,
        "seconds": seconds,
        "output_bytes": sizes,
    }
    if browser:
        row["chromium"] = page_load(browser, out / "report.html")
    return row


def print_size(row: dict[str, Any]) -> None:
    """One size's table: seconds, per 1,000 kernels, ratio to json.load."""
    kernels, base = row["kernels"], row["seconds"]["json.load"]
    mb = row["file_bytes"] / 1e6
    print(f"\n{kernels:,} kernels, {row['cards']:,} cards, {mb:.1f} MB of JSON")
    print(f"  {'step':28} {'s':>8} {'s/1k kern':>10} {'x json':>8}")
    for name, seconds in row["seconds"].items():
        ratio = seconds / base
        print(f"  {name:28} {seconds:8.2f} {1000 * seconds / kernels:10.4f} {ratio:8.1f}")
    for name, size in row["output_bytes"].items():
        print(f"  {name} output: {size / 1e6:.2f} MB")
    seen = row.get("chromium")
    if seen:
        print(
            f"  chromium: load event after {seen['load_wall_s']:.2f} s wall,"
            f" DOMContentLoaded {seen['dom_content_loaded_ms'] / 1000:.2f} s,"
            f" load {seen['load_event_ms'] / 1000:.2f} s, script done: {seen['ready']},"
            f" {seen['elements']:,} elements"
        )


def print_growth(rows: list[dict[str, Any]]) -> list[str]:
    """Time per kernel at the largest size over the smallest, per step; the steps past 1.5x."""
    if len(rows) < 2:
        return []
    small, large = rows[0], rows[-1]
    print(f"\ngrowth of time per kernel, {small['kernels']:,} -> {large['kernels']:,} kernels:")
    flagged = []
    for name in small["seconds"]:
        per_small = small["seconds"][name] / small["kernels"]
        per_large = large["seconds"][name] / large["kernels"]
        growth = per_large / per_small
        mark = "  NOT LINEAR" if growth > NOT_LINEAR else ""
        if mark:
            flagged.append(name)
        print(f"  {name:28} {growth:6.2f}x{mark}")
    return flagged


def main() -> None:
    """Build, time and print every size; optionally save the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="10000,30000,100000")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    per_copy = kernels_of(base_doc())
    browser = find_chromium()
    if browser is None:
        print("no Chromium on PATH (chromium, chromium-browser, google-chrome): page load skipped")
    start = cli(["--version"])
    print(f"CLI start (ncu-classify --version, a fresh process): {start:.2f} s")
    rows = []
    with tempfile.TemporaryDirectory(prefix="downstream_scale_") as tmp:
        for target in (int(k) for k in args.kernels.split(",")):
            copies = max(1, round(target / per_copy))
            rows.append(measure(copies, Path(tmp), browser))
            print_size(rows[-1])
    flagged = print_growth(rows)
    if args.json:
        doc = {"cli_start_s": start, "chromium": browser, "sizes": rows, "not_linear": flagged}
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
