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


def record_small(chains: bool, size: int) -> tuple[float, int]:
    """Seconds to record the small model and write its shapes file; the chains written."""
    import torch

    from ncu_classify.record.document import shapes_yaml, validated_document
    from ncu_classify.record.recorder import Recorder

    model, x = small_model(size)
    start = time.perf_counter()
    recorder = Recorder(roots={"vae": model}, chains=chains)
    with recorder, torch.no_grad():
        model(x)  # type: ignore[operator]
    document = validated_document(recorder, "bench")
    shapes_yaml(document)
    seconds = time.perf_counter() - start
    return seconds, sum(len(c) for c in document.chains.values())


def record_wan(chains: bool, work: Path) -> float:
    """Seconds of `ncu-classify record` of the small Wan DiT + VAE (a fresh process)."""
    argv = [sys.executable, "-m", "ncu_classify", "record", "-o", str(work / "wan.yaml")]
    argv += ["--chains" if chains else "--no-chains", "--stage", "transformer*=dit"]
    argv += ["--stage", "vae*=vae", "--stage", "=output", "--", "python"]
    argv += [str(ROOT / "fixtures" / "models" / "record_wan.py"), "--layers", "2"]
    argv += ["--text-tokens", "16", "--height", "64", "--width", "64"]
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


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
        best = {True: float("inf"), False: float("inf")}
        found = 0
        for _ in range(args.runs):
            for chains in (False, True):
                seconds, count = record_small(chains, size)
                best[chains] = min(best[chains], seconds)
                found = max(found, count)
        print(f"small VAE-like model ({size}x{size} frames, best of {args.runs}):"
              f" without chains {best[False]:.3f} s, with chains {best[True]:.3f} s"
              f" ({best[True] / best[False]:.2f}x), {found} chains")  # fmt: skip
    if args.wan:
        wan = {True: float("inf"), False: float("inf")}
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.runs):
                for chains in (False, True):
                    wan[chains] = min(wan[chains], record_wan(chains, Path(folder)))
        print(f"record of the small Wan DiT + VAE (best of {args.runs}):"
              f" --no-chains {wan[False]:.2f} s, --chains {wan[True]:.2f} s"
              f" ({wan[True] / wan[False]:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
