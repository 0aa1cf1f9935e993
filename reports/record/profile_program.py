"""The independent check of record's kernel time: a model script of fixtures/models run under
plain torch.profiler (no recorder), profiling its `section("inference")` and marking its
`section("dit")` and `section("vae_decode")`. A kernel belongs to a section when the CUDA call
that launched it (CUPTI's correlation id: runtime event -> kernel) ran inside the section's CPU
range: no op attribution, nothing of the tool's. Memory copies and sets are counted apart;
kernels whose launch is not in the trace are counted and said. Run on the GPU host from the
repository root, with the script's own arguments:

    python3 reports/record/profile_program.py fixtures/models/record_wan.py --height 480 \\
        --width 832 --frames 9 --device cuda --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json
"""

import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

RANGES = ("inference", "dit", "vae_decode")
found: dict[str, Any] = {}


@contextlib.contextmanager
def section(name: str) -> Iterator[None]:
    """The profiler around "inference", a range around the others."""
    if name != "inference":
        with record_function(name):
            yield
        return
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function(name):
            yield
        torch.cuda.synchronize()
    found["profile"] = prof


def main() -> None:
    under_recorder = sys.argv[1] == "--under-recorder"  # the program inside record's modes
    if under_recorder:
        del sys.argv[1]
    script, sys.argv = sys.argv[1], sys.argv[1:]
    spec = importlib.util.spec_from_file_location("program", script)
    assert spec and spec.loader
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    if under_recorder:
        from ncu_classify.record.recorder import Recorder

        with Recorder([("transformer*", "dit"), ("vae*", "vae")], measure=False):
            program.main(section)
    else:
        program.main(section)
    events = found["profile"].events()
    cpu = torch.autograd.DeviceType.CPU
    ranges = {e.name: e.time_range for e in events if e.name in RANGES and e.device_type == cpu}
    launches = {
        e.id: e.time_range.start
        for e in events
        if e.device_type == cpu and e.name.startswith("cu") and "Launch" in e.name
    }
    device = [e for e in events if e.device_type != cpu and e.name not in RANGES]
    copies = [e for e in device if e.name.startswith(("Memcpy", "Memset"))]
    kernels = [e for e in device if e not in copies]
    per_range = dict.fromkeys(RANGES, 0.0)
    by_name: dict[str, list[float]] = {}  # kernels of the DiT step by name: [count, us]
    unmatched = 0
    for kernel in kernels:
        start = launches.get(kernel.id)
        if start is None:
            unmatched += 1
            continue
        for name, span in ranges.items():
            if span.start <= start <= span.end:
                per_range[name] += kernel.time_range.elapsed_us()
                if name == "dit":
                    seen = by_name.setdefault(kernel.name[:90], [0, 0.0])
                    seen[0] += 1
                    seen[1] += kernel.time_range.elapsed_us()
    print(
        json.dumps(
            {
                "kernel_us_by_section": {k: round(v, 1) for k, v in per_range.items()},
                "all_kernels_us": round(sum(e.time_range.elapsed_us() for e in kernels), 1),
                "kernels": len(kernels),
                "kernels_without_launch": unmatched,
                "copies_us": round(sum(e.time_range.elapsed_us() for e in copies), 1),
                "dit_kernels_by_name": {k: [c, round(t, 1)] for k, (c, t) in by_name.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
