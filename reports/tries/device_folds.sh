#!/bin/bash
# Pad folds on the H200 (issue 39): the decode's causal pads (F.pad before each conv of padding
# 0) folded into the conv's own padding, from the recording with its chains
# (wan_chains_480x832_h200_shapes.yaml.xz, record_wan.py: VAE fp32 NCDHW) and the Wan 14B
# cards. From the repository root, with $OUT set and the wheels in .whl/:
# bash reports/tries/device_folds.sh [FOLDS] [REPEAT]
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:/opt/nvidia/nsight-compute/2025.3.1/extras/python:$PWD
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date
python3 -m ncu_classify classify fixtures/record_h200_wan14b -o /tmp/wan14b_cards.json > /dev/null
xz -dc reports/tries/wan_chains_480x832_h200_shapes.yaml.xz > /tmp/chains.yaml
start=$(date +%s)
timeout 540 python3 -m ncu_classify try /tmp/wan14b_cards.json --shapes /tmp/chains.yaml \
  -o "$OUT/tries_folds" --stage vae --top 1 --chains 0 --folds "${1:-8}" --repeat "${2:-5}" \
  > "$OUT/try.txt" 2>&1
echo "try rc $? in $(( $(date +%s) - start )) s"; tail -60 "$OUT/try.txt"
for log in "$OUT"/tries_folds/raw/*.ncu.log; do tail -n 3 "$log"; done
rm -f "$OUT"/tries_folds/outputs/*.f32  # random floats: they do not compress
(cd "$OUT" && tar cJf tries_folds.tar.xz tries_folds && rm -rf tries_folds)
