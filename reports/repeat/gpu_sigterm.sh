#!/usr/bin/env bash
# SIGTERM during the duration batch of a real `capture --repeat 3` on the H200, then --resume
# and classify: what is kept, what stays pending, nothing left running. Writes into $OUT.
set -u
S=fixtures/shapes/smoke.yaml
O=/tmp/st
rm -rf $O
summary() {
  python3 - "$O" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
print("batches:", [(b["name"], b["kind"], b["ended_by"], b["exit_code"]) for b in m["batches"]])
for s in m["shapes"]:
    print(f'  {s["status"]:7s} times={s.get("times_status")!s:8s} repeats={s.get("repeats")} {s["group"][:60]}')
PY
}
python3 -m ncu_classify capture --shapes $S -o $O --one-process --repeat 3 2> $OUT/first.err &
pid=$!
until grep -q '"kind": "shape"' $O/.work/all.times.status.jsonl 2>/dev/null; do sleep 0.2; done
kill -TERM $pid
wait $pid
echo "first capture exit $?"
tail -3 $OUT/first.err
summary
pgrep -af "ncu|capture.replay" | grep -v pgrep || echo "nothing left running"
python3 -m ncu_classify capture --shapes $S -o $O --one-process --repeat 3 --resume 2> $OUT/resume.err
echo "resume exit $?"
tail -2 $OUT/resume.err
summary
python3 -m ncu_classify classify $O -o $O/cards.json > /dev/null 2>&1
python3 - "$O" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1] + "/cards.json"))["cards"]:
    m = c.get("measurement") or {}
    s = m.get("summed_kernel_us") or {}
    print(f'  {c["status"]:10s} repeats={m.get("repeats")} n={s.get("n")} rsd={s.get("rsd_pct")} {c["group"][:55]}')
PY
cp $O/manifest.json $OUT/
