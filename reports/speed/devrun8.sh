#!/bin/bash
# device run 8 (issue 21): why does the tool's one-job time move by up to 0.5x between runs of
# one code while the bare reads move by a few %? Every run's phases at 1 and 16 jobs
# (--every), the classify bench with 7 rounds and its within-round ratios, page faults, the
# host's CPU topology; then 3,136 kernels with 5 rounds. After: one job reads while NVIDIA's
# library loads (19289f0), windows not checked twice (751ede1)
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; date; git log --oneline | head -1
(lscpu; free -m; cat /proc/pressure/cpu /proc/pressure/memory /proc/pressure/io 2>&1; df -h /tmp) > $OUT/host.txt 2>&1; cat $OUT/host.txt
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
timeout 120 python3 bench/classify_phases.py $W --times 4 --jobs 1,16 --rounds 5 --every > $OUT/phases_times4.txt 2>&1; echo "phases rc $?"; cat $OUT/phases_times4.txt
timeout 260 python3 bench/classify_speed.py --report $W --times 4 --rounds 7 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
timeout 180 python3 bench/classify_speed.py --report $W --times 8 --rounds 4 > $OUT/classify_times8.txt 2>&1; echo "times 8 rc $?"; cat $OUT/classify_times8.txt
cat /proc/pressure/cpu 2>&1; date
