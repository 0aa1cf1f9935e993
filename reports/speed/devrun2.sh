#!/bin/bash
# device run 2 (issue 21): classify against card reads, serial and on 16 cores, after the
# session's cuts (trusted models, rules cache, id cache)
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
for t in 4 8; do
  timeout 240 python3 bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz --times $t --rounds 3 > $OUT/classify_times$t.txt 2>&1; echo "times $t rc $?"; cat $OUT/classify_times$t.txt
done
timeout 150 python3 bench/classify_speed.py --copies 75 --rounds 3 --memory-steps 16 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
