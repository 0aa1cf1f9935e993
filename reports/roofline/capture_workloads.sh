set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "from fa3_fwd_interface import flash_attn_func; print('fa3_fwd importable')" 2>&1 | tail -1
for r in 480x832 704x1280; do
  python3 -m ncu_classify capture --shapes fixtures/shapes/workload_$r.yaml -o /tmp/w$r --one-process --gpus 0,1 > /tmp/w$r.out 2>&1; echo "$r capture rc=$?"
  grep -v "^ok " /tmp/w$r.out | tail -5
  grep -h "passes" /tmp/w$r/*.ncu.log | sed 's/.*- //' | sort | uniq -c
  python3 -c "
import json,collections; m=json.load(open('/tmp/w$r/manifest.json')); print(collections.Counter(s['status'] for s in m['shapes']), collections.Counter(s.get('backend_used') for s in m['shapes'] if s['stage']=='attention'))"
  mkdir -p $OUT/w$r; (cd /tmp/w$r && for f in *.ncu-rep; do xz -9 -T4 -c $f > $OUT/w$r/$f.xz; done; cp manifest.json *.ncu.log $OUT/w$r/)
done
ls -la $OUT/*
