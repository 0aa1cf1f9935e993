import collections, lzma, sys, time, pathlib, torch
from ncu_classify.capture.shapes import load_shapes
from ncu_classify.capture.replay_ops import prepare, NotReplayable
p = pathlib.Path("/tmp/w480.yaml")
p.write_bytes(lzma.decompress(pathlib.Path("reports/record/wan_1.3b_480x832_h200_recorded_ops.yaml.xz").read_bytes()))
ops = load_shapes(p).recorded.ops
ok, bad, t0 = 0, collections.Counter(), time.time()
for i, op in enumerate(ops):
    if time.time() - t0 > 420:
        bad["not reached (time)"] += len(ops) - i; break
    try:
        launch = prepare(op.op, op.args, op.kwargs, seed=i, device="cuda")()
        launch(); torch.cuda.synchronize(); ok += 1
    except NotReplayable as e:
        bad["NotReplayable: " + str(e)[:90]] += 1
    except Exception as e:
        bad[f"{op.op}: {type(e).__name__}: {str(e)[:90]}"] += 1
    torch.cuda.empty_cache()
print(f"replayed {ok} of {len(ops)} recorded ops on {torch.cuda.get_device_name()} in {time.time()-t0:.1f} s")
for k, v in bad.most_common(): print(v, k)
