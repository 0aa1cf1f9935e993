"""Every op of the committed H200 recording rebuilt by replay/aten and run once on the GPU
(run from the repository root on the GPU host: python3 reports/record/replay_ops_h200.py)."""

import collections
import lzma
import pathlib
import time

import torch

from ncu_classify.replay.aten import NotReplayable, prepare
from ncu_classify.shapes.file import load_shapes

RECORDING = pathlib.Path("reports/record/wan_1.3b_480x832_h200_recorded_ops.yaml.xz")
plain = pathlib.Path("/tmp/w480.yaml")
plain.write_bytes(lzma.decompress(RECORDING.read_bytes()))
recorded = load_shapes(plain).recorded
ops = recorded.ops if recorded else []
ok, bad, start = 0, collections.Counter[str](), time.time()
for number, op in enumerate(ops):
    if time.time() - start > 420:
        bad["not reached (time)"] += len(ops) - number
        break
    try:
        launch = prepare(op.op, op.args, op.kwargs, seed=number, device="cuda")()
        launch()
        torch.cuda.synchronize()
        ok += 1
    except NotReplayable as exc:
        bad["NotReplayable: " + str(exc)[:90]] += 1
    except Exception as exc:
        bad[f"{op.op}: {type(exc).__name__}: {str(exc)[:90]}"] += 1
    torch.cuda.empty_cache()
seconds = time.time() - start
print(
    f"replayed {ok} of {len(ops)} recorded ops on {torch.cuda.get_device_name()} in {seconds:.1f} s"
)
for what, count in bad.most_common():
    print(count, what)
