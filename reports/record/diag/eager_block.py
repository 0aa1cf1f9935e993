"""Diagnostic (GPU): the eager-code test's block under `record`, with region_ops' inputs
dumped to stderr: each watched launch (kernel, mark target, thread) and the ATen chain."""

import sys

import torch
import torch.nn.functional as F

from ncu_classify.record import region_ops as ro

_orig = ro._traced


def _traced(clock, times):
    print("DIAG times:", [k for k in times], file=sys.stderr)
    print("DIAG launches:", len(clock.launches), file=sys.stderr)
    ops = ro._aten_ops(clock.events, {x.thread for x in clock.launches})
    for x in clock.launches[:40]:
        target = clock.marks[x.mark].target
        finder = ro.InnermostMark(ops[x.thread][0]) if x.thread in ops else None
        chain = finder.chain(x.start) if finder else None
        names = [ops[x.thread][1][n].name() for n in chain] if chain else chain
        print("DIAG", x.name[:50], target, x.thread, names, file=sys.stderr)
    found, moves = _orig(clock, times)
    print("DIAG ops:", list(found.ops)[:20], "lost:", found.lost, file=sys.stderr)
    return found, moves


ro._traced = _traced

from contextlib import contextmanager  # noqa: E402

from ncu_classify.record import region_graph as rg  # noqa: E402
from ncu_classify.record import timing  # noqa: E402

_suspend = rg.suspended_modes


@contextmanager
def _suspended(rec):
    with _suspend(rec) as done:
        print("DIAG suspended:", done, file=sys.stderr)
        yield done


rg.suspended_modes = _suspended
_times = timing.KernelClock.kernel_times


def _kernel_times(self):
    per_mark, outside = _times(self)
    for number, time in sorted(per_mark.items()):
        target = self.marks[number].target if number >= 0 else "TUNING"
        names = sorted(time.names)[:3]
        print("DIAG mark", number, target, time.kernels, [n[:40] for n in names], file=sys.stderr)
    print("DIAG outside", outside.kernels, file=sys.stderr)
    return per_mark, outside


timing.KernelClock.kernel_times = _kernel_times


@torch._dynamo.disable
def cached(h):
    h = torch.cat([h[:, :, -1:], F.pad(h, (0, 0, 0, 0, 1, 0))], dim=2)
    return h * ((h > 0) * 0.5)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.GroupNorm(8, 64)
        self.conv = torch.nn.Conv3d(64, 64, 3, padding=1)

    def forward(self, x):
        return cached(self.conv(F.silu(self.norm(x))))


block = Block().cuda()
block.compile()
x = torch.randn(1, 64, 8, 64, 64, device="cuda")
with torch.no_grad():
    for _ in range(3):
        block(x)
    torch.cuda.synchronize()
