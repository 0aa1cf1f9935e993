"""Replay every shape of a recorded file on the CPU (CUDA calls stubbed as the tests do);
aten shapes: outputs compared with the recorded outputs' layouts; typed shapes through
replay_one (watching the F.* launch); chains eagerly on the CPU."""

import collections
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from ncu_classify.replay import target as replay
from ncu_classify.replay.aten import NotReplayable, Storages, prepare
from ncu_classify.replay.chain import chain_runner
from ncu_classify.replay.protocol import BatchFile
from ncu_classify.shapes.file import load_shapes

torch.cuda.empty_cache = lambda: None
torch.cuda.synchronize = lambda *a: None
torch.Tensor.cuda = lambda self, *a, **k: self
torch.cuda.nvtx.range_push = lambda name: None
torch.cuda.nvtx.range_pop = lambda: None
replay.DRAW_DEVICE = "cpu"
seen = []
for name in ("conv3d", "conv2d", "linear", "scaled_dot_product_attention"):
    real = getattr(F, name)

    def watching(*args, _name=name, _real=real, **kwargs):
        seen.append((_name, args, kwargs))
        return _real(*args, **kwargs)

    setattr(F, name, watching)

BATCH = BatchFile(seed=0, warmup=1, cudnn_benchmark=False, entries=[])
path = Path(sys.argv[1])
loaded = load_shapes(path)
storages = Storages()
stats = collections.Counter()
failures = []


def lay(t):
    return (
        list(t.shape),
        str(t.dtype).removeprefix("torch."),
        list(t.stride()),
        t.storage_offset(),
    )


for n, entry in enumerate(loaded.entries()):
    s = entry.shape
    try:
        if s.op == "aten":
            p = prepare(s, seed=n, device="cpu", storages=storages)
            r = p.run()
            outs = r if isinstance(r, (tuple, list)) else [r]
            outs = [t for t in outs if isinstance(t, torch.Tensor)]
            got = [lay(t) for t in outs]
            want = [(o.shape, o.dtype, o.strides, o.offset) for o in s.outputs]
            if got != want:
                failures.append((entry.group, f"outputs {got} != recorded {want}"))
            stats["aten"] += 1
        elif s.op == "compiled":
            stats["compiled-skipped"] += 1
        else:
            seen.clear()
            fields = replay.replay_one(entry, BATCH)
            stats[s.op] += 1
            if s.op == "attention":
                name, args, kw = seen[-1]
                m = kw.get("attn_mask")
                print(
                    "ATTN",
                    entry.group,
                    [lay(a) for a in args[:3]],
                    "mask",
                    None
                    if m is None
                    else (
                        lay(m),
                        m.dtype,
                        int(m.sum()) if m.dtype == torch.bool else None,
                    ),
                    {k: v for k, v in kw.items() if k != "attn_mask"},
                )
            if getattr(s, "layout", None):
                name, args, kw = seen[-1] if seen else (None, (), {})
                print("LAYOUT", entry.group, [lay(a) for a in args if isinstance(a, torch.Tensor)])
    except Exception as e:
        failures.append((entry.group, f"{type(e).__name__}: {e}"[:400]))
for _stage, chains in loaded.chains.items():
    for c in chains:
        try:
            pc = chain_runner(c, "eager", "cpu")
            pc.run()
            stats["chain"] += 1
        except NotReplayable as e:
            stats["chain-notreplayable"] += 1
            print("CHAIN-NR", c.name, str(e)[:200])
        except Exception as e:
            failures.append((c.name, f"chain {type(e).__name__}: {e}"[:400]))
print("STATS", dict(stats))
print("FAILURES", len(failures))
for g, why in failures:
    print("  FAIL", g, why)
