"""Probe: does the installed ncu_report fetch a kernel late in a report as cheaply as an early
one? Windows of a large report (`read/slices.py`) pay off only if it does. For one report
(plain or .xz): seconds to open it, to fetch the first 64 kernels, and to fetch the last 64 in
a fresh process that opened the report and fetched nothing before. Run with each ncu_report
on PYTHONPATH (the pip wheel, Nsight Compute's extras/python):

    python3 reports/speed/probe_reader_windows.py fixtures/record_h200_wan14b/all.ncu-rep.xz
"""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def fetch(path: str, first: bool) -> dict[str, float]:
    """In this process: open the report, fetch 64 kernels from its start or its end."""
    import ncu_report  # type: ignore[import-not-found]

    start = time.perf_counter()
    context = ncu_report.load_report(path)
    opened = time.perf_counter() - start
    rng = context.range_by_idx(0)
    count = rng.num_actions()
    indices = range(64) if first else range(count - 64, count)
    start = time.perf_counter()
    for index in indices:
        rng.action_by_idx(index).metric_by_name("gpu__time_duration.sum").as_double()
    return {"open_s": round(opened, 4), "fetch_64_s": round(time.perf_counter() - start, 4)}


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(fetch(sys.argv[1], sys.argv[2] == "first")))
        return
    source = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "report.ncu-rep"
        data = source.read_bytes()
        plain.write_bytes(lzma.decompress(data) if source.suffix == ".xz" else data)
        import ncu_report

        result: dict[str, object] = {"ncu_report": ncu_report.__file__}
        for where in ("first", "last", "first", "last"):
            done = subprocess.run(
                [sys.executable, __file__, str(plain), where], capture_output=True, text=True
            )
            result.setdefault(where, []).append(json.loads(done.stdout))  # type: ignore[union-attr]
        print(json.dumps(result))


if __name__ == "__main__":
    main()
