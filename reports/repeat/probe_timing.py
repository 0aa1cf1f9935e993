"""Probe (run once on the H200 to choose how `capture --repeat` times durations; kept as evidence).

Target mode (run under ncu or bare): for every shape of a shapes file, build inputs as capture
does, warm up, then
  - `counters`: one launch inside the shape's NVTX range (profiled by ncu with its metric list);
  - `ncudur`:   N launches inside the range (ncu profiles each, e.g. duration only);
and, in every mode, N launches outside any range timed by CUDA events (L2 flushed before each, or
not) and by torch.profiler (CUPTI activity), with the CPU seconds each method cost.

    python probe_timing.py target MODE SHAPES.yaml OUT.jsonl N
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from ncu_classify.replay.inputs import _CACHE
from ncu_classify.replay.target import BUILDERS, nvtx_range
from ncu_classify.shapes.file import load_shapes


def events(op, flush, n, do_flush):
    out = []
    for _ in range(n):
        if do_flush:
            flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        op()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) * 1e3)
    return out


def kineto(op, flush, n):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            flush.zero_()
            op()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.profiler.kineto_results.events():
        if ev.device_type() == torch._C._autograd.DeviceType.CUDA:
            rows.append([ev.name()[:90], ev.duration_ns(), ev.start_ns()])
    return rows


def main() -> None:
    mode, shapes_path, out_path, n = (
        sys.argv[2],
        Path(sys.argv[3]),
        Path(sys.argv[4]),
        int(sys.argv[5]),
    )
    shapes = load_shapes(shapes_path)
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    with out_path.open("w") as out:
        for entry in shapes.entries():
            rec = {"group": entry.group}
            t0 = time.monotonic()
            try:
                draws = _CACHE.start(shapes.seed)
                cpu, op = BUILDERS[type(entry.shape)](entry.shape, draws)
                draws.finish(cpu)
                del cpu
            except Exception as exc:
                rec["error"] = str(exc)[:200]
                out.write(json.dumps(rec) + "\n")
                continue
            rec["build_s"] = time.monotonic() - t0
            for _ in range(3):
                op()
            t0 = time.monotonic()
            if mode in ("counters", "ncudur"):
                with nvtx_range(entry.group):
                    for _ in range(1 if mode == "counters" else n):
                        op()
            rec["range_s"] = time.monotonic() - t0
            t0 = time.monotonic()
            rec["event_flush_us"] = events(op, flush, n, True)
            rec["event_flush_s"] = time.monotonic() - t0
            t0 = time.monotonic()
            rec["event_warm_us"] = events(op, flush, n, False)
            try:
                t0 = time.monotonic()
                rec["kineto"] = kineto(op, flush, n)
                rec["kineto_s"] = time.monotonic() - t0
            except Exception as exc:
                rec["kineto_error"] = repr(exc)[:300]
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(
                entry.group,
                rec.get("range_s"),
                rec.get("kineto_s"),
                rec.get("kineto_error"),
                file=sys.stderr,
            )


if __name__ == "__main__":
    main()
