#!/bin/bash
# device run 9 (issue 21): the issue's own row for --jobs 1 (many small reports: 300 smoke
# reports, 975 kernels) with 7 rounds and the within-round ratios, and the 1,568-kernel
# report again on another host of the kind (run 8: tool/card 1.121 median, 16 jobs 4.53x)
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; date; lscpu | grep -E "Model name|Thread|MHz"
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
timeout 240 python3 bench/classify_speed.py --copies 75 --rounds 7 --memory-steps 16,64 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 240 python3 bench/classify_speed.py --report $W --times 4 --rounds 7 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
date
