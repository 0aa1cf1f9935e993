#!/bin/bash
# `try --program` on the H200 (issue 39): the Wan 14B recording's VAE decode (fp32 NCDHW as
# record_wan.py runs it by default) with every shape changed together, durations only.
# On the device host, from the repository root, with $OUT set by the runner and the wheels in
# .whl/: bash reports/tries/device_program.sh MOVE STAGE [REPEAT]
set -u
move=$1 stage=$2 repeat=${3:-3}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:/opt/nvidia/nsight-compute/2025.3.1/extras/python:$PWD
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
python3 -m ncu_classify classify fixtures/record_h200_wan14b -o /tmp/wan14b_cards.json > /dev/null
xz -dc reports/record/wan_14b_480x832_h200_shapes.yaml.xz > /tmp/wan14b_shapes.yaml
start=$(date +%s)
timeout 280 python3 -m ncu_classify try /tmp/wan14b_cards.json --shapes /tmp/wan14b_shapes.yaml \
  -o "$OUT/program_$stage" --stage "$stage" --program "$move" --repeat "$repeat" \
  > "$OUT/program_$stage.txt" 2>&1
echo "try --program $move --stage $stage rc $? in $(( $(date +%s) - start )) s"
tail -20 "$OUT/program_$stage.txt"
for log in "$OUT/program_$stage"/raw/*.ncu.log; do tail -n 3 "$log"; done
(cd "$OUT" && tar cJf "program_$stage.tar.xz" "program_$stage" && rm -rf "program_$stage")
