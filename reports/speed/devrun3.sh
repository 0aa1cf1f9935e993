#!/bin/bash
# device run 3 (issue 21): classify against card reads (and the same reads of lean copies),
# serial and on 16 cores, after lean copies for every reader and the paused cycle collector;
# where the 16-job run's wall time goes; capture --drop-sources checked (drop_sources_check.sh)
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc PATH=/usr/local/cuda/bin:/opt/nvidia/nsight-compute/2025.3.1:$PATH
nproc; python3 --version
timeout 100 bash reports/speed/drop_sources_check.sh
timeout 180 python3 bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz --times 4 --rounds 3 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
timeout 150 python3 bench/classify_speed.py --copies 75 --rounds 3 --memory-steps 16 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 120 python3 bench/classify_phases.py fixtures/record_h200_wan14b/all.ncu-rep.xz --times 4 --jobs 1,16 --windows-per-job 1,2,4 --rounds 2 > $OUT/phases_times4.txt 2>&1; echo "phases rc $?"; cat $OUT/phases_times4.txt
