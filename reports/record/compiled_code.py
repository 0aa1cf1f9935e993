"""Do the replayed compiled regions compile to the program's kernels? A program is recorded
(`ncu-classify record`, in this process) while Inductor's output code of each of its compiles
is kept; then each `compiled` shape of the recording is replayed compiled (`replay.chain`, as
capture does, on the device given) and its output code compared with the program's compile of
that graph, kernel by kernel (Triton or C++ source, by name; the size arguments' names
aside, `ks0`/`ks1`, which the program and the replay may order otherwise). Prints a JSON
line per graph and a summary; `--diff DIR` writes each differing kernel's two sources
there. On a GPU each replay is also timed (torch.profiler's kernel durations, as record
times the program, median of 3 calls after the compile) against the program's `real_us`.
Run from the repository root (on the GPU host with `--device cuda`):

    python3 reports/record/compiled_code.py --device cpu -o /tmp/s.yaml -- \\
        python3 fixtures/models/record_wan.py --layers 1 --frames 9 --compile vae.decoder
"""

import argparse
import concurrent.futures.process
import concurrent.futures.thread
import json
import os
import re
import runpy
import sys
from pathlib import Path
from unittest import mock

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")  # every compile: its code

import torch
from torch._guards import CompileContext
from torch._inductor.graph import GraphLowering

from ncu_classify.replay.chain import chain_runner, replay_mode
from ncu_classify.shapes.chain_shape import CompiledShape
from ncu_classify.shapes.file import load_shapes

KERNEL = re.compile(r"^(\w+) = async_compile\.(?:triton|cpp_pybinding|cpp)\((.*?)'''(.*?)'''",
                    flags=re.M | re.S)  # fmt: skip


def unnamed(source: str) -> str:
    """A kernel's source with its size arguments unnamed (`ks0`, `ks1`: Inductor orders them
    by the names dynamo hashed from their sources, the program's and the replay's differ)."""
    return re.sub(r"\bks\d+\b", "ks", source)


def kernels(code: str) -> dict[str, str]:
    """Inductor's kernels in one module's output code: name -> source."""
    return {name: source for name, _, source in KERNEL.findall(code)}


def main() -> None:
    """Record, replay, compare; the summary's last line says how many graphs matched."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("-o", "--output", required=True, help="the shapes file record writes")
    parser.add_argument("--diff", type=Path, help="a folder for the differing kernels' sources")
    parser.add_argument("--record", action="append", default=[], help="an option for record")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    compiled: dict[str, str] = {}  # compile id -> the program's output code

    def keep(code: str) -> None:
        compiled[str(CompileContext.current_compile_id())] = code

    with mock.patch.object(GraphLowering, "save_output_code", keep):
        sys.argv = ["ncu-classify", "record", "-o", args.output, *args.record, "--", *program]
        try:
            runpy.run_module("ncu_classify", run_name="__main__")
        except SystemExit as exit:
            if exit.code:
                raise
    _reopened()
    shapes = load_shapes(Path(args.output))
    regions = [s for stage in shapes.stages.values() for s in stage if isinstance(s, CompiledShape)]
    same = 0
    for region in regions:
        replayed: list[str] = []
        with mock.patch.object(GraphLowering, "save_output_code", replayed.append):
            runner = chain_runner(region.chain, "compile", args.device,
                                  compile_mode=replay_mode(region))  # fmt: skip
            with torch.no_grad():
                runner.run()
                timed = _timed(runner.run) if args.device == "cuda" else None
        ran, again = kernels(compiled.get(region.compile_id, "")), kernels("".join(replayed))
        names = sorted(set(ran) | set(again))
        differing = [k for k in names if unnamed(ran.get(k, "-")) != unnamed(again.get(k, "+"))]
        renamed = [k for k in names if k not in differing and ran.get(k) != again.get(k)]
        same += not differing and bool(ran)
        print(json.dumps({
            "graph": region.chain.name, "compile_id": region.compile_id,
            "dynamic_inputs": sum(bool(i.dynamic) for i in region.chain.inputs),
            "program_kernels": len(ran), "replay_kernels": len(again), "differing": differing,
            "size_arguments_renamed": renamed, "program_us": region.real_us,
            "program_launches": len(region.kernels), **(timed or {}),
        }))  # fmt: skip
        if args.diff and differing:
            _write(args.diff, region.chain.name, differing, ran, again)
    print(f"{same} of {len(regions)} compiled shapes replay the program's kernels, code for code")


def _reopened() -> None:
    """Executors usable again: record ran the program's exit (threads joined, atexit), which
    marks every new executor's future refused; Inductor's compile pools start afresh."""
    concurrent.futures.thread._shutdown = False  # type: ignore[attr-defined]
    concurrent.futures.process._global_shutdown = False  # type: ignore[attr-defined]
    from torch._inductor.async_compile import AsyncCompile, shutdown_compile_workers

    shutdown_compile_workers()
    AsyncCompile.pool.cache_clear()  # its thread pool, shut by the exit, is not in that reset


def _timed(run: object) -> dict[str, float | int]:
    """The replay's kernel time per call (us, median of 3) and its kernel launches per call,
    from torch.profiler's CUDA kernel events, as record measures the program."""
    from torch.profiler import ProfilerActivity, profile

    times, launches = [], 0
    for _ in range(3):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()  # type: ignore[operator]
            torch.cuda.synchronize()
        events = [e for e in prof.events() if e.device_type.name == "CUDA"]
        times.append(sum(e.device_time for e in events))
        launches = len(events)
    return {"replay_us": round(sorted(times)[1], 1), "replay_launches": launches}


def _write(folder: Path, name: str, differing: list[str], ran: dict[str, str],
           again: dict[str, str]) -> None:  # fmt: skip
    """Each differing kernel's program and replay sources, as files to diff."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    for kernel in differing:
        for side, code in (("program", ran), ("replay", again)):
            (folder / f"{stem}.{kernel}.{side}.txt").write_text(code.get(kernel, "(none)\n"))


if __name__ == "__main__":
    main()
