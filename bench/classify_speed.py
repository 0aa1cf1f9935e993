"""Time `classify` against the bare cost of reading the same metrics with ncu_report.

Builds a folder of N real H200 reports (copies of the committed smoke capture, decompressed so
that both sides read the same plain files), then prints kernels per second for:
  bare    one process: ncu_report.load_report + the same metric look-ups, nothing else
  tool    classify(): the same reads plus cards, rules and the JSON file
serially and with one process per core, their ratio, and the peak memory of classify runs over
a growing number of reports (to show it stays flat).

    python bench/classify_speed.py [--copies 8] [--memory-steps 2,8,32]
"""

from __future__ import annotations

import argparse
import json
import lzma
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "fixtures" / "smoke_h200"
sys.path.insert(0, str(ROOT))

from ncu_classify.core.metrics import CATALOG  # noqa: E402


def make_folder(folder: Path, copies: int) -> list[Path]:
    """`copies` copies of every smoke report, decompressed, with distinct names."""
    folder.mkdir(parents=True, exist_ok=True)
    plains = []
    for src in sorted(SMOKE.glob("*.ncu-rep.xz")):
        plain = folder / "_src" / src.name.removesuffix(".xz")
        plain.parent.mkdir(exist_ok=True)
        with lzma.open(src) as a, plain.open("wb") as b:
            shutil.copyfileobj(a, b)
        plains.append(plain)
    out = []
    for i in range(copies):
        for plain in plains:
            dst = folder / f"{plain.name.removesuffix('.ncu-rep')}_{i:03d}.ncu-rep"
            if not dst.exists():  # a copy: classify reads a hard link of a read file once
                shutil.copyfile(plain, dst)
            out.append(dst)
    return out


def bare_read(path: Path) -> int:
    """Open one report and read every catalog metric of every kernel; return kernel count."""
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    kernels = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            action.name(ncu_report.IAction.NameBase_DEMANGLED)
            for spec in CATALOG:
                for name in spec.names:
                    metric = action.metric_by_name(name)
                    if metric is not None:
                        metric.value()
                        metric.unit()
                        break
            kernels += 1
    return kernels


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child_bare(folder: Path, jobs: int) -> float:
    """In a fresh process: seconds to read every report of `folder` with bare ncu_report."""
    paths = sorted(folder.glob("*.ncu-rep"))
    cpu = cpu_seconds()
    start = time.perf_counter()
    if jobs == 1:
        kernels = sum(map(bare_read, paths))
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            kernels = sum(pool.map(bare_read, paths))
    elapsed = time.perf_counter() - start
    print(json.dumps({"seconds": elapsed, "kernels": kernels, "cpu": cpu_seconds() - cpu}))
    return elapsed


def child_tool(folder: Path, jobs: int) -> float:
    """In a fresh process: seconds for classify() plus writing the cards file."""
    from ncu_classify.cards.files import write_card_file
    from ncu_classify.verdicts.classify import classify
    from ncu_classify.verdicts.rules import load_rules

    cpu = cpu_seconds()
    start = time.perf_counter()
    cards = classify([folder], load_rules(), jobs=jobs)
    write_card_file(folder.parent / "cards.json", cards)
    elapsed = time.perf_counter() - start
    kernels = sum(len(c.kernels) for c in cards.cards)
    status = Path("/proc/self/status").read_text().splitlines()
    own = next(int(x.split()[1]) for x in status if x.startswith("VmHWM"))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    cpu = cpu_seconds() - cpu
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "kernels": kernels,
                "main_kib": own,
                "worker_kib": kids,
                "cpu": cpu,
            }
        )
    )
    return elapsed


def in_child(mode: str, folder: Path, jobs: int) -> dict:
    """Run `mode` in a fresh interpreter, so that no run inherits another's warm or leaked state."""
    proc = subprocess.run(
        [sys.executable, __file__, f"--child-{mode}", str(folder), "--jobs", str(jobs)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    if proc.returncode:
        sys.exit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=50, help="copies of the 4 smoke reports")
    parser.add_argument("--memory-steps", default="16,64,256", help="copies per memory run")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many timings")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--child-bare", type=Path)
    parser.add_argument("--child-tool", type=Path)
    args = parser.parse_args()
    if args.child_bare:
        child_bare(args.child_bare, args.jobs)
        return
    if args.child_tool:
        child_tool(args.child_tool, args.jobs)
        return
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="ncu-bench-") as tmp:
        folder = Path(tmp) / "reports"
        paths = make_folder(folder, args.copies)
        print(
            f"{len(paths)} reports, {cores} cores, python {sys.version.split()[0]};"
            f" each figure the best of {args.rounds} fresh processes"
        )
        print(
            f"{'jobs':>4} {'kernels':>8} {'bare k/s':>10} {'tool k/s':>10} {'tool/bare time':>15}"
            f" {'tool/bare CPU':>14}"
        )
        tool_times = {}
        for jobs in sorted({1, cores}):
            bares = [in_child("bare", folder, jobs) for _ in range(args.rounds)]
            runs = [in_child("tool", folder, jobs) for _ in range(args.rounds)]
            bare, tool = min(r["seconds"] for r in bares), min(r["seconds"] for r in runs)
            cpu_ratio = min(r["cpu"] for r in runs) / min(r["cpu"] for r in bares)
            kernels = runs[0]["kernels"]
            tool_times[jobs] = tool
            print(
                f"{jobs:>4} {kernels:>8} {kernels / bare:>10.1f} {kernels / tool:>10.1f}"
                f" {tool / bare:>15.3f} {cpu_ratio:>14.3f}"
            )
        if cores > 1:
            print(
                f"tool speed-up from 1 to {cores} processes:"
                f" {tool_times[1] / tool_times[cores]:.2f}x"
            )
        print("peak memory of classify (MiB) as reports grow: main process, largest worker")
        for copies in (int(x) for x in args.memory_steps.split(",")):
            step = Path(tmp) / f"mem{copies}" / "reports"
            make_folder(step, copies)
            run = in_child("tool", step, cores)
            print(
                f"  {4 * copies:>5} reports, {run['kernels']:>5} kernels:"
                f" {run['main_kib'] / 1024:8.1f} {run['worker_kib'] / 1024:8.1f}"
            )
            shutil.rmtree(step.parent)


if __name__ == "__main__":
    main()
