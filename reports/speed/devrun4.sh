#!/bin/bash
# device run 4 (issue 21): the classify figures after the kernel-card cuts (margins compiled per
# rules file, hot units ranked on tuples, catalog dicts copied), twice at 1,568 kernels to show
# the run-to-run spread, at 3,136, on 300 smoke reports, and the phases of one run
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; lscpu | grep -m1 "Model name"
for run in a b; do
  timeout 120 python3 bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz --times 4 --rounds 3 > $OUT/classify_times4_$run.txt 2>&1; echo "times 4 $run rc $?"; cat $OUT/classify_times4_$run.txt
done
timeout 150 python3 bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz --times 8 --rounds 3 > $OUT/classify_times8.txt 2>&1; echo "times 8 rc $?"; cat $OUT/classify_times8.txt
timeout 120 python3 bench/classify_speed.py --copies 75 --rounds 3 --memory-steps 16 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 90 python3 bench/classify_phases.py fixtures/record_h200_wan14b/all.ncu-rep.xz --times 4 --jobs 1,16 --rounds 3 > $OUT/phases_times4.txt 2>&1; echo "phases rc $?"; cat $OUT/phases_times4.txt
