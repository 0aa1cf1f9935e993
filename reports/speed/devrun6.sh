#!/bin/bash
# device run 6 (issue 21): the classify figures after the readers stream their rows in parts
# and the parent unpickles them on arrival (read/workers.py), on top of run 5's preload and
# kernel JSON made by the readers; three times at 1,568 kernels for the spread, at 3,136, on
# 300 smoke reports, and the phases of one run
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; lscpu | grep -m1 "Model name"; lscpu | grep -E "^Thread|^Core|^Socket"; date
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
timeout 90 python3 bench/classify_phases.py $W --times 4 --jobs 1,16 --rounds 3 > $OUT/phases_times4.txt 2>&1; echo "phases rc $?"; cat $OUT/phases_times4.txt
for run in a b c; do
  timeout 120 python3 bench/classify_speed.py --report $W --times 4 --rounds 3 > $OUT/classify_times4_$run.txt 2>&1; echo "times 4 $run rc $?"; cat $OUT/classify_times4_$run.txt
done
timeout 150 python3 bench/classify_speed.py --report $W --times 8 --rounds 3 > $OUT/classify_times8.txt 2>&1; echo "times 8 rc $?"; cat $OUT/classify_times8.txt
timeout 120 python3 bench/classify_speed.py --copies 75 --rounds 3 --memory-steps 16 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
date
