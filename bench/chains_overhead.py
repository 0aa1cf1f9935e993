"""What keeping the dataflow (chains) costs `record`: the same program recorded with and
without chains, wall time each (best of --runs, alternating), and their ratio (issue 39: at
most 1.5x). Two programs: a small diffusers-free VAE-like model (conv3d resnet blocks with
group norm, SiLU and padding, and an attention block with linears), in this process through
the Python API; and, with --wan, `ncu-classify record` of fixtures/models/record_wan.py at its
test size (diffusers' Wan DiT + VAE; needs diffusers), --chains against --no-chains.

    python bench/chains_overhead.py [--runs 3] [--size 16] [--wan]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def small_model(size: int) -> tuple[object, object]:
    """A VAE-like decoder: conv_in, 4 resnet blocks (group norm, SiLU, pad, conv3d, residual
    add), one attention block (group norm, q/k/v linears, SDPA, out linear, add), conv_out."""
    import torch
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.norm1, self.norm2 = torch.nn.GroupNorm(8, width), torch.nn.GroupNorm(8, width)
            self.conv1 = torch.nn.Conv3d(width, width, 3)
            self.conv2 = torch.nn.Conv3d(width, width, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.conv1(F.pad(F.silu(self.norm1(x)), (1,) * 6))
            return x + self.conv2(F.pad(F.silu(self.norm2(h)), (1,) * 6))

    class Attention(torch.nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.norm = torch.nn.GroupNorm(8, width)
            self.q, self.k, self.v, self.out = (torch.nn.Linear(width, width) for _ in range(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, c, t, h, w = x.shape
            tokens = self.norm(x).flatten(2).transpose(1, 2)
            q, k, v = (p(tokens).unsqueeze(1) for p in (self.q, self.k, self.v))
            attended = F.scaled_dot_product_attention(q, k, v).squeeze(1)
            return x + self.out(attended).transpose(1, 2).reshape(b, c, t, h, w)

    class Decoder(torch.nn.Module):
        def __init__(self, width: int = 32) -> None:
            super().__init__()
            self.conv_in = torch.nn.Conv3d(4, width, 1)
            self.blocks = torch.nn.ModuleList([Block(width), Block(width), Attention(width),
                                               Block(width), Block(width)])  # fmt: skip
            self.conv_out = torch.nn.Conv3d(width, 3, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.conv_in(x)
            for block in self.blocks:
                h = block(h)
            return self.conv_out(F.silu(h))

    torch.manual_seed(0)
    return Decoder().eval(), torch.randn(1, 4, 3, size, size)


def record_small(chains: bool, size: int) -> tuple[float, float, int]:
    """Wall and CPU seconds to record the small model and write its shapes file (CPU time is
    steadier on a shared machine: one thread, so it is the wall time of a quiet one); the
    chains written."""
    import torch

    from ncu_classify.record.document import shapes_yaml, validated_document
    from ncu_classify.record.recorder import Recorder

    model, x = small_model(size)
    start, cpu = time.perf_counter(), time.process_time()
    recorder = Recorder(roots={"vae": model}, chains=chains)
    with recorder, torch.no_grad():
        model(x)  # type: ignore[operator]
    document = validated_document(recorder, "bench")
    shapes_yaml(document)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, sum(len(c) for c in document.chains.values())


def record_wan(chains: bool, work: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `ncu-classify record` of the small Wan DiT + VAE (a fresh
    process, on one thread)."""
    argv = [sys.executable, "-m", "ncu_classify", "record", "-o", str(work / "wan.yaml")]
    argv += ["--chains" if chains else "--no-chains", "--stage", "transformer*=dit"]
    argv += ["--stage", "vae*=vae", "--stage", "=output", "--", "python"]
    argv += [str(ROOT / "fixtures" / "models" / "record_wan.py"), "--layers", "2"]
    argv += ["--text-tokens", "16", "--height", "64", "--width", "64"]
    start, before = time.perf_counter(), os.times()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(argv, check=True, capture_output=True, env=env)
    after = os.times()
    cpu = after.children_user + after.children_system
    cpu -= before.children_user + before.children_system
    return time.perf_counter() - start, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", type=int, action="append", help="frame sizes (4, 16)")
    parser.add_argument("--wan", action="store_true", help="also record the small Wan model")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # the model's own compute steady: the recorder's cost shows
    record_small(True, 4)  # warm: imports, first-call costs
    for size in args.size or [4, 16]:
        best = {key: float("inf") for key in ((c, k) for c in (False, True) for k in (0, 1))}
        found = 0
        for _ in range(args.runs):
            for chains in (False, True):
                *times, count = record_small(chains, size)
                for kind, seconds in enumerate(times):
                    best[(chains, kind)] = min(best[(chains, kind)], seconds)
                found = max(found, count)
        _line(f"small VAE-like model, {size}x{size} frames, {found} chains", best, args.runs)
    if args.wan:
        best = {key: float("inf") for key in ((c, k) for c in (False, True) for k in (0, 1))}
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.runs):
                for chains in (False, True):
                    for kind, seconds in enumerate(record_wan(chains, Path(folder))):
                        best[(chains, kind)] = min(best[(chains, kind)], seconds)
        _line("`record` of the small Wan DiT + VAE (whole program)", best, args.runs)


def _line(what: str, best: dict[tuple[bool, int], float], runs: int) -> None:
    """One line: without and with chains, wall and CPU seconds, and the ratios."""
    wall, cpu = (best[(False, k)] for k in (0, 1)), (best[(True, k)] for k in (0, 1))
    (wall_off, cpu_off), (wall_on, cpu_on) = wall, cpu
    print(f"{what} (best of {runs}): wall {wall_off:.3f} -> {wall_on:.3f} s"
          f" ({wall_on / wall_off:.2f}x), CPU {cpu_off:.3f} -> {cpu_on:.3f} s"
          f" ({cpu_on / cpu_off:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
