"""Where one `classify` run's wall time goes, phase by phase, at each `--jobs`: planning the
read units (framing check, the windows' copy without sources), the wait for NVIDIA's library,
which loads on a thread meanwhile (`finish_loading`), the parent's ncu_report warm-up,
the readers (forked children, or this process with one job; of which the parent's forks,
`_start`, its unpickling of the parts of rows they stream, `take`, which overlaps their work,
and its taking of each one's result once it has ended, `_result`), the cards and the JSON file. What
is not the readers is serial: it bounds the gain of more cores on one large report. Parts of
the readers' time, as this process spends it (with one job, all of it; with several, only the
windows' copy, inside the plan, since the children's clocks stay with them): the copy without
sources, ncu_report's `load_report`, and the kernel cards with their JSON. `--every` prints
every run, fastest first, to show which phase a slow run lost its time in. With several jobs,
the reader processes' own timeline, in seconds after the first fork: the last one's start,
the median time to a reader's first part of rows, the median and slowest reader, the last end.

    python bench/classify_phases.py fixtures/record_h200_wan14b/all.ncu-rep.xz --times 3 --jobs 1,16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(module: Any, name: str, phases: dict[str, float]) -> None:
    """Wrap `module.name` so that its wall time adds to `phases[name]`."""
    original: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - start

    setattr(module, name, wrapper)


def _log_children(parallel: Any, folder: Path) -> None:
    """Make each reader process note, in a file of its own under `folder`, when it started
    (perf_counter is the same clock in every process of a machine), when its first part of
    rows was ready and when it ended; and this process when it began to fork them."""
    batch = parallel._read_batch
    forked = parallel._read_in_children

    def noted(tasks: Any) -> Any:
        began = time.perf_counter()
        first = None
        for item in batch(tasks):
            first = first or time.perf_counter()
            yield item
        ended = time.perf_counter()
        (folder / str(os.getpid())).write_text(json.dumps([began, first or ended, ended]))

    def readers(*args: Any) -> Any:
        (folder / "start").write_text(json.dumps(time.perf_counter()))
        return forked(*args)

    parallel._read_batch, parallel._read_in_children = noted, readers


def _children(folder: Path) -> dict[str, float]:
    """From the readers' notes, seconds after the first fork: the last reader's start, the
    median and the slowest reader's time to its first part and to its end, the last end."""
    if not (folder / "start").exists():
        return {}
    zero = json.loads((folder / "start").read_text())
    notes = [json.loads(f.read_text()) for f in folder.iterdir() if f.name != "start"]
    if not notes:
        return {}
    return {
        "last_start": max(n[0] for n in notes) - zero,
        "first_part": statistics.median(n[1] - n[0] for n in notes),
        "reader_median": statistics.median(n[2] - n[0] for n in notes),
        "reader_max": max(n[2] - n[0] for n in notes),
        "last_end": max(n[2] for n in notes) - zero,
    }


def child(folder: Path, jobs: int, per_job: int) -> None:
    """In a fresh process: one classify run, its phases as one JSON line; a large report cut
    into `per_job` windows per job (1: as classify cuts it)."""
    from ncu_classify.cards.files import KernelJson, write_card_file
    from ncu_classify.read import kernels, lean, parallel, slices, workers

    if per_job > 1:
        cut = slices.windows
        slices.windows = lambda count, jobs: cut(count, jobs * per_job)  # type: ignore[assignment]
    from ncu_classify.verdicts import classify as classify_module
    from ncu_classify.verdicts.rules import load_rules

    phases: dict[str, float] = {}
    timed(parallel, "plan_units", phases)
    timed(parallel, "finish_loading", phases)  # what the plan left of NVIDIA's library load
    timed(kernels, "warm_up", phases)
    timed(parallel, "_read_in_children", phases)
    timed(parallel, "_read_here", phases)
    timed(classify_module, "cards_for_source", phases)
    timed(workers, "_start", phases)  # forking the readers
    timed(workers, "_result", phases)  # taking what they sent back, once each has ended
    timed(workers._Child, "take", phases)  # unpickling their parts as they arrive
    timed(lean, "copy_without_sources", phases)  # the copy without sources, in the readers
    timed(kernels, "_load", phases)  # ncu_report's load_report, in the readers
    timed(classify_module, "_card_and_json", phases)  # kernel cards and their JSON, ditto
    timeline = folder.parent / f"children-{os.getpid()}"
    timeline.mkdir()
    _log_children(parallel, timeline)
    rules = load_rules()
    start = time.perf_counter()
    made = KernelJson()
    cards = classify_module.classify([folder], rules, jobs=jobs, kernel_json=made)
    phases["classify"] = time.perf_counter() - start
    phases.update(_children(timeline))
    start = time.perf_counter()
    write_card_file(folder.parent / "cards.json", cards, made)
    phases["write"] = time.perf_counter() - start
    readers = phases.get("_read_in_children", 0.0) + phases.get("_read_here", 0.0)
    phases["readers"] = readers - phases.get("warm_up", 0.0)
    phases["kernels"] = sum(len(c.kernels) for c in cards.cards)
    print(json.dumps(phases))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, nargs="?")
    parser.add_argument("--times", type=int, default=1)
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--windows-per-job", default="1", help="e.g. 1,2,4: windows per job")
    parser.add_argument("--every", action="store_true", help="every run, fastest first")
    parser.add_argument("--child", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, int(args.jobs), int(args.windows_per_job))
        return
    sys.path.insert(0, str(ROOT / "bench"))
    from classify_speed import make_folder

    order = (
        "plan_units",
        "finish_loading",
        "warm_up",
        "readers",
        "_start",
        "_result",
        "take",
        "copy_without_sources",
        "_load",
        "_card_and_json",
        "cards_for_source",
        "write",
        "classify",
        "last_start",
        "first_part",
        "reader_median",
        "reader_max",
        "last_end",
    )
    with tempfile.TemporaryDirectory(prefix="ncu-phases-") as tmp:
        folder = Path(tmp) / "reports"
        make_folder(folder, 1, [args.report], args.times)
        print(
            "jobs win/job kernels "
            + " ".join(f"{p:>16}" for p in order)
            + ("  (seconds)" if args.every else "  (seconds, best run)")
        )
        for jobs in (int(j) for j in args.jobs.split(",")):
            for per_job in (int(k) for k in args.windows_per_job.split(",")):
                if jobs == 1 and per_job > 1:
                    continue
                runs = []
                for _ in range(args.rounds):
                    argv = [__file__, "--child", str(folder), "--jobs", str(jobs)]
                    done = subprocess.run(
                        [sys.executable, *argv, "--windows-per-job", str(per_job)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                ranked = sorted(runs, key=lambda r: r["classify"] + r["write"])
                for rank, run in enumerate(ranked if args.every else ranked[:1]):
                    figures = " ".join(f"{run.get(p, 0.0):>16.3f}" for p in order)
                    mark = f"  (run {rank + 1} of {len(runs)})" if args.every else ""
                    print(f"{jobs:>4} {per_job:>7} {int(run['kernels']):>7} {figures}{mark}")


if __name__ == "__main__":
    main()
