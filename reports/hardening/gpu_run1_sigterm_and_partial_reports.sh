set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
echo "== A: partial reports"; python3 fixtures/fault_h200/make_partial.py /tmp/partial 2>&1 | tail -12
mkdir -p $OUT; for n in 1 2 3; do xz -9 -c /tmp/partial/dit$n.ncu-rep > $OUT/dit$n.ncu-rep.xz; done
echo "== B: SIGTERM after 25 s, --one-process --gpus 0,1, 480x832"
python3 -m ncu_classify capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/t1 --one-process --gpus 0,1 > /tmp/t1.out 2> /tmp/t1.err &
P=$!; sleep 25; T0=$(date +%s.%N); kill -TERM $P; wait $P; echo "rc=$? after $(echo "$(date +%s.%N) - $T0" | bc) s"
tail -3 /tmp/t1.err; echo "left running:"; ps -eo pid,pgid,etimes,cmd | grep -E "ncu|ncu_classify(\.capture)?\.replay" | grep -v grep
python3 - <<'PY'
import json,collections
m=json.load(open('/tmp/t1/manifest.json'))
print(collections.Counter(s['status'] for s in m['shapes']), [(b['name'],b['exit_code'],b['ended_by'],b['report']) for b in m['batches']])
print([ (s['group'][:40],s['kernels']) for s in m['shapes'] if s['status']=='ok'][:5])
PY
echo "== B2: resume"; python3 -m ncu_classify capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/t1 --one-process --gpus 0,1 --resume > /tmp/t1r.out 2>/tmp/t1r.err; echo rc=$?; tail -4 /tmp/t1r.out
python3 -m ncu_classify classify /tmp/t1 -o /tmp/t1.cards.json --jobs 8 2>&1 | tail -12; echo rc=$?
echo "== C: two SIGTERMs (hard stop) on one GPU"
python3 -m ncu_classify capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/t2 --one-process > /tmp/t2.out 2> /tmp/t2.err &
P=$!; sleep 20; kill -TERM $P; sleep 1; kill -TERM $P; wait $P; echo "rc=$?"; ps -eo pid,cmd | grep -E "ncu |ncu_classify(\.capture)?\.replay" | grep -v grep
python3 -c "
import json,collections; m=json.load(open('/tmp/t2/manifest.json')); print(collections.Counter(s['status'] for s in m['shapes']), [(b['name'],b['exit_code'],b['ended_by'],b['report']) for b in m['batches']])"
ls -la /tmp/t2 /tmp/t2/.work
echo "== D: gpu tests"; timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu.py 2>&1 | tail -5
cd /tmp && tar cf - t1/manifest.json t1/*.log t2/manifest.json t2/*.log t1.err t1r.out t2.err t1.cards.json | xz -9 > $OUT/runs.tar.xz
