set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C="python3 -m ncu_classify"
echo "== SIGTERM after 25 s, --one-process --gpus 0,1, 480x832; a second capture into the same folder meanwhile"
$C capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/t1 --one-process --gpus 0,1 > /tmp/t1.out 2> /tmp/t1.err &
P=$!; sleep 12; $C capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/t1 --one-process --gpus 0,1 --resume; echo "second capture rc=$?"
sleep 13; T0=$(date +%s%N); kill -TERM $P; wait $P; echo "rc=$? after $(( ($(date +%s%N) - T0) / 1000000 )) ms"
cat /tmp/t1.err; echo "left running:"; ps -eo pid,cmd | grep -E "ncu |ncu_classify(\.capture)?\.replay" | grep -v grep
python3 - <<'PY'
import json,collections
m=json.load(open('/tmp/t1/manifest.json'))
print(collections.Counter(s['status'] for s in m['shapes']), [(b['name'],b['gpu'],b['exit_code'],b['ended_by'],b['wall_seconds'],b['report']) for b in m['batches']])
PY
$C classify /tmp/t1 -o /tmp/t1.pending.json --jobs 8 > /dev/null 2>&1; echo "classify of the interrupted capture rc=$?"
python3 -c "
import json,collections; c=json.load(open('/tmp/t1.pending.json'))['cards']; print(collections.Counter(x['status'] for x in c)); print([x['error'][:60] for x in c if x['status']=='failed'][:1])"
echo "== resume"; $C capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/t1 --one-process --gpus 0,1 --resume > /tmp/t1r.out 2>/tmp/t1r.err; echo rc=$?; tail -3 /tmp/t1r.out
$C classify /tmp/t1 -o /tmp/t1.cards.json --jobs 8 > /dev/null; echo "classify rc=$?"
python3 - <<'PY'
import json
a=json.load(open('/tmp/t1/manifest.json')); b=json.load(open('fixtures/workload_h200_480x832/manifest.json'))
ka={s['group']:(s['kernels'],s['input_sha256']) for s in a['shapes']}; kb={s['group']:(s['kernels'],s['input_sha256']) for s in b['shapes']}
print("kernel counts and input hashes equal to the committed capture:", sum(ka[g]==kb[g] for g in kb), "of", len(kb))
c=json.load(open('/tmp/t1.cards.json')); d=json.load(open('fixtures/workload_h200_480x832/cards.json'))
pa={x['group']:x['primary'] for x in c['cards']}; pb={x['group']:x['primary'] for x in d['cards']}
print("verdicts equal:", sum(pa[g]==pb[g] for g in pb), [(g[:50],pa[g],pb[g]) for g in pb if pa[g]!=pb[g]])
PY
echo "== gpu tests"; timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu.py 2>&1 | tail -3
mkdir -p $OUT; cd /tmp && tar cf - t1/manifest.json t1/*.log t1.err t1r.out t1.cards.json t1.pending.json | xz -9 > $OUT/run2.tar.xz
