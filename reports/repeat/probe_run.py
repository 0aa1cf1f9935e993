"""Driver of probe_timing.py on the H200 (see there): times a plain capture, the probe under ncu
with capture's metric list, the probe under a duration-only ncu (twice), and the probe bare."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ncu_classify.capture.drill import capture_metrics
from ncu_classify.capture.ncu_cmd import ncu_argv
from ncu_classify.shapes.file import load_shapes

SHAPES = Path(sys.argv[1])
OUT = Path(os.environ["OUT"])
N = 5
PROBE = [sys.executable, str(Path(__file__).with_name("probe_timing.py")), "target"]
groups = [e.group for e in load_shapes(SHAPES).entries()]
work = Path("/tmp/probe")
shutil.rmtree(work, ignore_errors=True)
work.mkdir()


def timed(name, argv):
    t0 = time.monotonic()
    with (work / f"{name}.log").open("wb") as log:
        rc = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT)
    print(f"{name}: {time.monotonic() - t0:.1f} s rc={rc}", flush=True)


timed(
    "capture_plain",
    [
        sys.executable,
        "-m",
        "ncu_classify.cli",
        "capture",
        "--shapes",
        str(SHAPES),
        "-o",
        str(work / "c1"),
        "--one-process",
    ],
)
for name, mode, metrics in [
    ("ncu_counters", "counters", capture_metrics(None)),
    ("ncu_dur1", "ncudur", ["gpu__time_duration.sum"]),
    (
        "ncu_dur2",
        "ncudur",
        [
            "gpu__time_duration.sum",
            "sm__cycles_elapsed.avg.per_second",
            "dram__cycles_elapsed.avg.per_second",
        ],
    ),
]:
    argv = ncu_argv(
        ncu="ncu",
        report_stem=work / name,
        metrics=metrics,
        groups=groups,
        target=[*PROBE, mode, str(SHAPES), str(work / f"{name}.jsonl"), str(N)],
    )
    timed(name, argv)
timed("bare", [*PROBE, "bare", str(SHAPES), str(work / "bare.jsonl"), str(N)])
subprocess.call(f"tar cJf {OUT}/probe.tar.xz -C {work} --exclude='c1/*.ncu-rep' .", shell=True)
subprocess.call(f"du -sh {work}/*", shell=True)
