"""Time `classify` against the bare cost of reading what its cards are made of with ncu_report.

Builds a folder of N real H200 reports (copies of the committed smoke capture, decompressed so
that both sides read the same plain files; or, with --report, one large report alone), then
prints kernels per second for:
  card    one process: the ncu_report calls the tool makes for its cards, recorded once per
          report and replayed with nothing around them (bench/card_reads.py): reading's floor
  lean    the same calls on copies of the reports without their source blocks, made before the
          timing: what the tool's readers open (read/lean.py), so tool/lean is the tool's own
          Python over the reads it makes
  tool    classify(): the same reads plus units, verdicts, margins, cards and the JSON file
  catalog one process: ncu_report.load_report + only the catalog's ~23 card metrics (the
          issue's first "bare read"; the cards need about 5x more look-ups than that)
serially and with one process per core, their ratios (of the fastest runs, and within each
round: a shared host's speed drifts by more than the tool's own cost), and the peak memory of
classify runs over a growing number of reports (to show it stays flat).

    python bench/classify_speed.py [--copies 8] [--memory-steps 2,8,32]
    python bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz
    python bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz --times 3

`--times K` makes one report of K times the source's kernels (its result blocks repeated after
its file header: a 1,176-kernel report from the 392 of the Wan 14B capture), to time a report
larger than any committed one; the counters are the real ones, repeated.
"""

from __future__ import annotations

import argparse
import json
import lzma
import multiprocessing
import os
import resource
import shutil
import statistics
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


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value, pos, shift = value | (byte & 0x7F) << shift, pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _payload_size(header: bytes) -> int:
    """Field 5 (PayloadSize) of a BlockHeader message."""
    pos = 0
    while pos < len(header):
        key, pos = _varint(header, pos)
        if key & 7 == 0:
            value, pos = _varint(header, pos)
            if key >> 3 == 5:
                return value
        elif key & 7 == 2:
            size, pos = _varint(header, pos)
            pos += size
        else:
            pos += 8 if key & 7 == 1 else 4
    raise ValueError("a block header without a payload size")


def repeated(plain: Path, times: int) -> None:
    """Rewrite the plain report `plain` with its result blocks `times` over (one report of
    `times` x its kernels; ncu_report reads them as one range)."""
    data = plain.read_bytes()
    start = 4 + 4 + int.from_bytes(data[4:8], "little")  # magic, FileHeader block
    pos = start
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "little")
        pos += 4 + size + _payload_size(data[pos + 4 : pos + 4 + size])
    if pos != len(data):
        sys.exit(f"{plain}: the block framing does not end at the end of the file")
    plain.write_bytes(data[:start] + data[start:] * times)


def make_folder(folder: Path, copies: int, sources: list[Path], times: int = 1) -> list[Path]:
    """`copies` copies of every source report, decompressed, with distinct names; beside them
    (`reads.json`) the metric names the tool looks up per kernel of each source."""
    folder.mkdir(parents=True, exist_ok=True)
    src_dir = folder.parent / "_src"
    src_dir.mkdir(exist_ok=True)
    plains = []
    for src in sources:
        plain = src_dir / src.name.removesuffix(".xz")
        if not plain.exists():
            with lzma.open(src) as a, plain.open("wb") as b:
                shutil.copyfileobj(a, b)
            if times > 1:
                repeated(plain, times)
        plains.append(plain)
    reads = folder.parent / "reads.json"
    if not reads.exists():
        from card_reads import record

        reads.write_text(json.dumps({p.name.removesuffix(".ncu-rep"): record(p) for p in plains}))
    out = []
    for i in range(copies):
        for plain in plains:
            dst = folder / f"{plain.name.removesuffix('.ncu-rep')}_{i:03d}.ncu-rep"
            if not dst.exists():  # a copy: classify reads a hard link of a read file once
                shutil.copyfile(plain, dst)
            out.append(dst)
    return out


def lean_copies(folder: Path) -> None:
    """Beside `folder`, in `lean/`, each report without its source blocks, as the tool reads it."""
    from ncu_classify.read.framing import check_report
    from ncu_classify.read.lean import lean_report

    lean = folder.parent / "lean"
    lean.mkdir(exist_ok=True)
    for path in sorted(folder.glob("*.ncu-rep")):
        with lean_report(path, check_report(path, label=path), lean) as copy:
            shutil.copyfile(copy, lean / path.name)


def catalog_read(path: Path) -> int:
    """Open one report and read every catalog metric of every kernel; return kernel count."""
    import ncu_report
    from card_reads import actions

    kernels = 0
    for action in actions(path):
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


_READS: dict[str, list[list[str]]] = {}


def card_read(path: Path) -> int:
    """The tool's recorded ncu_report calls for this report's source, bare."""
    from card_reads import replay

    return replay(path, _READS[path.name.rsplit("_", 1)[0]])


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def page_faults() -> int:
    """Minor page faults of this process and its finished children (fresh memory touched: on a
    VM whose memory grows as it is used, a dear one)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_minflt + kids.ru_minflt


def child_bare(folder: Path, jobs: int, mode: str) -> float:
    """In a fresh process: seconds to read every report of `folder` with bare ncu_report, the
    tool's card reads (`card`) or the catalog's metrics alone (`catalog`)."""
    paths = sorted((folder.parent / "lean" if mode == "lean" else folder).glob("*.ncu-rep"))
    _READS.update(json.loads((folder.parent / "reads.json").read_text()))
    read = catalog_read if mode == "catalog" else card_read
    cpu, faults = cpu_seconds(), page_faults()
    start = time.perf_counter()
    if jobs == 1:
        kernels = sum(map(read, paths))
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            kernels = sum(pool.map(read, paths))
    elapsed = time.perf_counter() - start
    cpu, faults = cpu_seconds() - cpu, page_faults() - faults
    print(json.dumps({"seconds": elapsed, "kernels": kernels, "cpu": cpu, "faults": faults}))
    return elapsed


def child_tool(folder: Path, jobs: int) -> float:
    """In a fresh process: seconds for classify() plus writing the cards file, in the CLI's
    order (NVIDIA's library starts loading, then the rules load and classify runs)."""
    from ncu_classify.cards.files import KernelJson, write_card_file
    from ncu_classify.read.preload import start_loading
    from ncu_classify.verdicts.classify import classify
    from ncu_classify.verdicts.rules import load_rules

    cpu, faults = cpu_seconds(), page_faults()
    start = time.perf_counter()
    start_loading()
    made = KernelJson()
    cards = classify([folder], load_rules(), jobs=jobs, kernel_json=made)
    write_card_file(folder.parent / "cards.json", cards, made)
    elapsed = time.perf_counter() - start
    kernels = sum(len(c.kernels) for c in cards.cards)
    status = Path("/proc/self/status").read_text().splitlines()
    own = next(int(x.split()[1]) for x in status if x.startswith("VmHWM"))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    cpu, faults = cpu_seconds() - cpu, page_faults() - faults
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "kernels": kernels,
                "main_kib": own,
                "worker_kib": kids,
                "cpu": cpu,
                "faults": faults,
            }
        )
    )
    return elapsed


Run = dict[str, float]  # one fresh run's figures: seconds, kernels, cpu, memory


def in_child(mode: str, folder: Path, jobs: int) -> Run:
    """Run `mode` in a fresh interpreter, so that no run inherits another's warm or leaked state."""
    proc = subprocess.run(
        [sys.executable, __file__, f"--child-{mode}", str(folder), "--jobs", str(jobs)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), str(ROOT / "bench"), os.environ.get("PYTHONPATH", "")]
            ),
        },
    )
    if proc.returncode:
        sys.exit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    run: Run = json.loads(proc.stdout.strip().splitlines()[-1])
    return run


def rounds_of(folder: Path, jobs: int, rounds: int) -> dict[str, list[Run]]:
    """Per mode (card, lean, catalog, tool), `rounds` fresh runs, the modes taken in turn round
    by round, so that a machine whose speed drifts (a shared host) shifts them all alike
    instead of the ratio."""
    runs: dict[str, list[Run]] = {"card": [], "lean": [], "catalog": [], "tool": []}
    for _ in range(rounds):
        for mode, done in runs.items():
            done.append(in_child(mode, folder, jobs))
    return runs


def paired(runs: dict[str, list[Run]], mode: str) -> tuple[float, float, float]:
    """Median, lowest and highest of tool / `mode` within each round (the two runs of a round
    are a few seconds apart: a host that slows down for a while slows both)."""
    ratios = sorted(
        t["seconds"] / m["seconds"] for t, m in zip(runs["tool"], runs[mode], strict=True)
    )
    return statistics.median(ratios), ratios[0], ratios[-1]


def compare(folder: Path, rounds: int, cores: int) -> None:
    """The four sides, serially and with one process per core, side by side."""
    print(
        f"{'jobs':>4} {'kernels':>8} {'card k/s':>9} {'tool k/s':>9} {'catalog k/s':>12}"
        f" {'tool/card':>10} {'(CPU)':>6} {'tool/lean':>10} {'tool/catalog':>13}"
    )
    tool_times = {}
    spreads = []
    for jobs in sorted({1, cores}):
        runs = rounds_of(folder, jobs, rounds)
        fastest = {mode: min(done, key=lambda r: r["seconds"]) for mode, done in runs.items()}
        card, catalog, tool, lean = (fastest[m] for m in ("card", "catalog", "tool", "lean"))
        kernels = tool["kernels"]
        tool_times[jobs] = tool["seconds"]
        print(
            f"{jobs:>4} {kernels:>8} {kernels / card['seconds']:>9.1f}"
            f" {kernels / tool['seconds']:>9.1f} {kernels / catalog['seconds']:>12.1f}"
            f" {tool['seconds'] / card['seconds']:>10.3f} {tool['cpu'] / card['cpu']:>6.3f}"
            f" {tool['seconds'] / lean['seconds']:>10.3f}"
            f" {tool['seconds'] / catalog['seconds']:>13.3f}"
        )
        spreads.append((jobs, kernels, runs))
    print(
        "tool over each side within a round (median, lowest-highest of the rounds);"
        " seconds of every run, fastest-slowest"
    )
    for jobs, kernels, runs in spreads:
        ratios = "  ".join(
            f"tool/{mode} {m:.3f} ({lo:.3f}-{hi:.3f})"
            for mode in ("card", "lean", "catalog")
            for m, lo, hi in [paired(runs, mode)]
        )
        times = "  ".join(
            f"{mode} {min(r['seconds'] for r in done):.3f}-{max(r['seconds'] for r in done):.3f}"
            for mode, done in runs.items()
        )
        faults = "  ".join(
            f"{mode} {statistics.median(r['faults'] for r in done) / kernels:.0f}"
            for mode, done in runs.items()
        )
        print(f"{jobs:>4} {kernels:>8}  {ratios}\n{'':>14}{times}")
        print(f"{'':>14}minor page faults per kernel (median): {faults}")
    if cores > 1:
        speedup = tool_times[1] / tool_times[cores]
        medians = {
            jobs: statistics.median(r["seconds"] for r in runs["tool"]) for jobs, _, runs in spreads
        }
        print(
            f"tool speed-up from 1 to {cores} processes: {speedup:.2f}x"
            f" (fastest runs), {medians[1] / medians[cores]:.2f}x (medians)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=50, help="copies of the source reports")
    parser.add_argument("--report", type=Path, help="one report instead of the smoke capture")
    parser.add_argument("--times", type=int, default=1, help="--report's kernels repeated K times")
    parser.add_argument("--memory-steps", default="16,64,256", help="copies per memory run")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many timings")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--child-card", type=Path)
    parser.add_argument("--child-catalog", type=Path)
    parser.add_argument("--child-lean", type=Path)
    parser.add_argument("--child-tool", type=Path)
    args = parser.parse_args()
    for mode in ("card", "lean", "catalog"):
        if getattr(args, f"child_{mode}"):
            child_bare(getattr(args, f"child_{mode}"), args.jobs, mode)
            return
    if args.child_tool:
        child_tool(args.child_tool, args.jobs)
        return
    cores = os.cpu_count() or 1
    sources = [args.report] if args.report else sorted(SMOKE.glob("*.ncu-rep.xz"))
    copies = 1 if args.report else args.copies
    with tempfile.TemporaryDirectory(prefix="ncu-bench-") as tmp:
        folder = Path(tmp) / "reports"
        paths = make_folder(folder, copies, sources, args.times if args.report else 1)
        lean_copies(folder)
        print(
            f"{len(paths)} reports, {cores} cores, python {sys.version.split()[0]};"
            f" each figure the best of {args.rounds} fresh processes, the four sides in turn"
        )
        compare(folder, args.rounds, cores)
        if args.report:
            return
        print("peak memory of classify (MiB) as reports grow: main process, largest worker")
        for steps in (int(x) for x in args.memory_steps.split(",")):
            step = Path(tmp) / f"mem{steps}" / "reports"
            make_folder(step, steps, sources)
            run = in_child("tool", step, cores)
            print(
                f"  {len(sources) * steps:>5} reports, {run['kernels']:>5} kernels:"
                f" {run['main_kib'] / 1024:8.1f} {run['worker_kib'] / 1024:8.1f}"
            )
            shutil.rmtree(step.parent)


if __name__ == "__main__":
    main()
