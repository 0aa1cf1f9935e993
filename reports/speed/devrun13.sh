#!/bin/bash
# device run 13 (issue 21): a second host for run 12's code (0f3540c): where one job's time goes
# at 1,568 kernels (every run's phases), then the classify bench on 300 smoke reports and on
# the 1,568-kernel report, 7 rounds each
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; date
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
timeout 100 python3 bench/classify_phases.py $W --times 4 --jobs 1 --rounds 5 --every > $OUT/phases_times4.txt 2>&1; echo "phases rc $?"; cat $OUT/phases_times4.txt
timeout 150 python3 bench/classify_speed.py --copies 75 --rounds 7 --memory-steps 4 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 200 python3 bench/classify_speed.py --report $W --times 4 --rounds 7 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
date
