#!/bin/bash
# Issue 41's speed goal on a GPU, one 10-minute command: with PROBE=1, the light list's replay
# passes and seconds per kernel (probe_pass_cost.py: full, light, one metric); then the Wan 14B
# recording (254 shapes) captured whole, at --coverage 99.5, and at --coverage 99.5 with
# --light-after 90 and 80 (bench/capture_coverage.py, no SIGTERM run), each classified: the
# share of the whole capture's time and how many light verdicts settled. LIGHTS="90": only 90;
# NOTARGET=1: no plain --coverage 99.5; BENCH_S: the bench's timeout (560 s). Outputs packed
# whatever stops. With $OUT set and the wheels in .whl/, from the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/light; mkdir -p $W
xz -dc reports/record/wan_14b_480x832_h200_shapes.yaml.xz > $W/wan.yaml
pack() { (cd $W && tar cJf $OUT/light.tar.xz ./*.log ./*.json ./*.txt 2>/dev/null); }
trap pack EXIT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
if [ "${PROBE:-0}" = 1 ]; then  # the probe kernel's passes; the cards' replay_passes say the same
  timeout 60 python3 reports/speed/probe_pass_cost.py --json $W/pass_cost_light.json \
    --only one_metric full light 2>&1 | tee $W/passes.txt
fi
timeout ${BENCH_S:-560} python3 bench/capture_coverage.py --shapes $W/wan.yaml --work $W \
  --coverage 99.5 ${NOTARGET:+--skip-target} \
  --light-after ${LIGHTS:-90 80} --no-half 2>&1 | tee $W/bench_light.txt
