"""Stand-in for ncu in CPU tests of capture's process handling. It measures nothing.

It checks the command line capture builds (every flag capture relies on, nothing else), runs the
batch in a child target process through the real batch/status protocol (fake_target.py), and,
like ncu, leaves a report of what was profiled before the target ended: a real H200 report that
holds exactly the kernels of the shapes that finished, or none when nothing finished. Its exit
code is the target's, as ncu's is.

FAKE_NCU_REPORTS: a folder with index.json (one real report per subset of the three DiT shapes,
made by real ncu: fixtures/fault_h200), or committed capture folders (manifest.json and real
reports, separated by os.pathsep): the report is then cut from theirs to the kernels of the
shapes that finished (report_subset.py), so any subset of those captures' shapes can be served.

SIGTERM, as real ncu 2025.3.1 on the H200 answers it: the target is ended (SIGKILL: the shape in
hand is lost), the report of the shapes finished so far is written, and ncu dies of the SIGTERM
(exit -15).

FAKE_NCU_MODE: ok | crash_after_<N> | hang (the target ignores SIGTERM) | slow (each shape
takes FAKE_SHAPE_SECONDS) | perm (ERR_NVGPUCTRPERM, no target) | truncated (the report is cut
at 60%) | noreport (the target finishes, no report is written).
FAKE_NCU_LOG: a file that gets one JSON line per run (pid, start, end, CUDA_VISIBLE_DEVICES,
process group).
"""

import contextlib
import json
import lzma
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VALUED = {
    "--config-file": "off",
    "--clock-control": "none",
    "--replay-mode": "kernel",
    "--target-processes": "all",
}


def fail(message, code=1):
    print(f"==ERROR== {message}", file=sys.stderr)
    sys.exit(code)


def parse(args):
    """The flags capture passes, checked; returns (groups, metrics, export stem, target)."""
    seen, groups, metrics, stem, i = {}, [], None, None, 0
    while i < len(args) and args[i].startswith("--"):
        flag = args[i]
        if flag in VALUED:
            seen[flag] = args[i + 1]
            i += 2
        elif flag in ("--nvtx", "--force-overwrite"):
            seen[flag] = True
            i += 1
        elif flag == "--nvtx-include":
            groups.append(args[i + 1])
            i += 2
        elif flag == "--metrics":
            metrics = args[i + 1].split(",")
            i += 2
        elif flag == "--export":
            stem = args[i + 1]
            i += 2
        else:
            fail(f"unrecognised option '{flag}'")
    for flag, value in VALUED.items():
        if seen.get(flag) != value:
            fail(f"capture must pass {flag} {value}, got {seen.get(flag)!r}")
    if not (seen.get("--nvtx") and seen.get("--force-overwrite") and stem and metrics):
        fail("capture must pass --nvtx, --force-overwrite, --metrics and --export")
    return groups, metrics, stem, args[i:]


def main():
    args = sys.argv[1:]
    if args == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 0)")
        return 0
    groups, metrics, stem, target = parse(args)
    if target[1:3] != ["-m", "ncu_classify.replay"] or len(target) != 5:
        fail(f"unexpected target {target}")
    batch_file, status_file = target[3], target[4]
    entries = json.loads(Path(batch_file).read_text())["entries"]
    if groups != [e["group"] + "/" for e in entries]:
        fail(f"--nvtx-include {groups} does not name the batch's ranges with a trailing slash")
    from ncu_classify.core.metrics import LIGHT_METRICS, capture_metric_names
    from ncu_classify.core.stalls import drill_metric_names

    base = capture_metric_names()  # a drill-down adds the warp-state counters
    durations_only = ["gpu__time_duration.sum"]  # a --repeat batch of durations
    if metrics not in (
        base,
        base + [n for n in drill_metric_names() if n not in base],
        durations_only,
        list(LIGHT_METRICS),  # a light batch (--light-after): still served a full report
    ):
        fail(
            "--metrics is not the catalog's list (nor it with the drill-down counters, nor"
            " the duration alone, nor the light list)"
        )
    mode = os.environ.get("FAKE_NCU_MODE", "ok")
    started = time.time()
    if mode == "perm":
        print(
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA"
            " GPU Performance Counters on the target device 0."
        )
        return 1
    child = subprocess.Popen([target[0], str(HERE / "fake_target.py"), batch_file, status_file])
    terminated = []

    def end_target(signum, frame):
        terminated.append(signum)
        with contextlib.suppress(ProcessLookupError):
            child.kill()

    signal.signal(signal.SIGTERM, end_target)
    code = child.wait()
    lines = [json.loads(line) for line in Path(status_file).read_text().splitlines()]
    finished = {line["group"] for line in lines if line.get("status") == "ok"}
    write_report(stem, finished, mode)
    log = os.environ.get("FAKE_NCU_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "start": started,
                        "end": time.time(),
                        "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
                        "pgid": os.getpgid(0),
                    }
                )
                + "\n"
            )
    if terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    return code if code >= 0 else 128 - code


def write_report(stem, finished, mode):
    """Like ncu: a report of the kernels profiled so far; none if nothing was profiled."""
    if not finished or mode == "noreport":
        print("==WARNING== No kernels were profiled.")
        return
    folders = [Path(p) for p in os.environ["FAKE_NCU_REPORTS"].split(os.pathsep) if p]
    if (folders[0] / "index.json").exists():
        index = json.loads((folders[0] / "index.json").read_text())
        name = next((n for n, groups in index.items() if set(groups) == finished), None)
        if name is None:
            fail(f"no real report holds exactly the shapes {sorted(finished)}")
        data = lzma.decompress((folders[0] / name).read_bytes())
    else:
        from report_subset import real_report

        try:
            data = real_report(folders, finished)
        except KeyError as exc:
            fail(str(exc))
    if mode == "truncated":
        data = data[: len(data) * 6 // 10]
    Path(stem + ".ncu-rep").write_bytes(data)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.exit(main())
