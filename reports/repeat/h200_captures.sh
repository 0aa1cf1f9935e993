#!/usr/bin/env bash
# The repeated captures behind fixtures/repeat_h200/ and reports/repeat/, run on the H200 host
# (one GPU, ncu 2025.3.1) from the repository root, with this package and its wheels on
# PYTHONPATH and FlashAttention-3's forward wheel (fa3-fwd) installed. Writes into $OUT.
#   step 1: bench/repeat_cost.py (a single capture and a --repeat 5 one, side by side) and a
#           second --repeat 5 capture of the same workload (the diff of the two must show no
#           change beyond noise)
#   step 2: --repeat 5 --repeat-counters (every metric five times: the spread table), and the
#           fp32 DiT with TF32 off and on, each --repeat 5 (a real change)
set -uo pipefail
step=$1
W=fixtures/shapes/workload_480x832.yaml
V=fixtures/shapes/variants
pack() {  # folder name: reports xz-compressed, manifest and logs, into $OUT/name.tar
  (cd /tmp/rep && xz -T16 -6 "$1"/*.ncu-rep && tar cf "$OUT/$1.tar" "$1")
}
mkdir -p /tmp/rep
if [ "$step" = 1 ]; then
  python3 bench/repeat_cost.py --shapes $W --out /tmp/rep --repeat 5 | tee "$OUT/bench_repeat_cost.json"
  mv /tmp/rep/repeat /tmp/rep/w480_rep5_a && mv /tmp/rep/single /tmp/rep/w480_single
  python3 -m ncu_classify capture --shapes $W -o /tmp/rep/w480_rep5_b --one-process --repeat 5
  for f in w480_rep5_a w480_rep5_b w480_single; do pack $f; done
else
  python3 -m ncu_classify capture --shapes $W -o /tmp/rep/w480_rep5_counters --one-process --repeat 5 --repeat-counters
  python3 -m ncu_classify capture --shapes $V/dit_480x832_fp32_notf32.yaml -o /tmp/rep/dit_notf32_rep5 --one-process --repeat 5
  python3 -m ncu_classify capture --shapes $V/dit_480x832_fp32_tf32.yaml -o /tmp/rep/dit_tf32_rep5 --one-process --repeat 5
  for f in w480_rep5_counters dit_notf32_rep5 dit_tf32_rep5; do pack $f; done
fi
ls -la "$OUT"
