#!/bin/bash
# device run 1 (issue 21): ncu per-kernel cost probe, classify bench on 16 cores
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:/opt/nvidia/nsight-compute/2025.3.1:$PATH NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; nvidia-smi --query-gpu=name,clocks.sm,memory.used --format=csv
timeout 300 python3 reports/speed/probe_kernel_cost.py --json $OUT/kernel_cost.json > $OUT/kernel_cost.txt 2>&1; echo "probe rc $?"; tail -25 $OUT/kernel_cost.txt
timeout 200 python3 bench/classify_speed.py --report fixtures/record_h200_wan14b/all.ncu-rep.xz --times 4 --rounds 3 > $OUT/classify_1568.txt 2>&1; echo "bench rc $?"; cat $OUT/classify_1568.txt
timeout 120 python3 bench/classify_speed.py --copies 50 --rounds 3 --memory-steps 16 > $OUT/classify_smoke200.txt 2>&1; echo "bench2 rc $?"; cat $OUT/classify_smoke200.txt
