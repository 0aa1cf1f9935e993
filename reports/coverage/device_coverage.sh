#!/bin/bash
# Issue 41 on the H200, one 10-minute command (the scaled run is a second one: SCALED=1):
# the Wan 2.1 14B step + decode recording (reports/record/wan_14b_480x832_h200_shapes.yaml.xz,
# 254 shapes) captured whole, at --coverage 99.5 and SIGTERM'd at half the whole capture's
# time, each classified (bench/capture_coverage.py); with SCALED=1, the recording x 4 (1,016
# shapes) at --coverage 99.5 alone (--skip-whole: its whole capture is not run; stopped at
# $BUDGET s (550), it says how far it got: 167 x 4 shapes, 287 x 4 kernels, may not fit).
# Outputs packed whatever stops. With $OUT set and the wheels in .whl/, from the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/cov; mkdir -p $W
xz -dc reports/record/wan_14b_480x832_h200_shapes.yaml.xz > $W/wan.yaml
pack() { (cd $W && tar cJf $OUT/coverage.tar.xz ./*.log ./*.json ./*.txt 2>/dev/null); }
trap pack EXIT
if [ "${SCALED:-0}" = 1 ]; then
  B=${BUDGET:-550}  # seconds before the SIGTERM; the classify after it needs ~30 s more
  timeout $((B + 40)) python3 bench/capture_coverage.py --shapes $W/wan.yaml --work $W --scale 4 \
    --skip-whole 1 --no-half --coverage 99.5 --budget "$B" 2>&1 | tee $W/bench_scaled.txt
else
  timeout 580 python3 bench/capture_coverage.py --shapes $W/wan.yaml --work $W \
    --coverage 99.5 2>&1 | tee $W/bench.txt
fi
