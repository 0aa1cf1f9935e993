#!/bin/bash
# device run 11 (issue 21): a second sample of run 10's code (memfd copies) on another host of
# the kind: 300 smoke reports and the 1,568-kernel report, --jobs 1 and 16, within-round ratios
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; date
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
timeout 100 python3 bench/classify_speed.py --copies 75 --rounds 5 --memory-steps 4 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 95 python3 bench/classify_speed.py --report $W --times 4 --rounds 4 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
date
