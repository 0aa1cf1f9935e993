#!/bin/bash
# `try` on the H200 (issue 39): the Wan 14B recording's cards (fixtures/record_h200_wan14b, as
# record_wan.py ran it: DiT step bf16, VAE decode fp32 NCDHW), the top moves of each stage
# measured. On the device host, from the repository root, with $OUT set by the runner and the
# Python 3.12 wheels in .whl/: bash reports/tries/device_try.sh [TOP] [REPEAT] [STAGES...]
set -u
top=${1:-10}
repeat=${2:-5}
shift 2 || true
stages=${*:-vae dit}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:/opt/nvidia/nsight-compute/2025.3.1/extras/python:$PWD
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date
python3 -m ncu_classify classify fixtures/record_h200_wan14b -o /tmp/wan14b_cards.json
xz -dc reports/record/wan_14b_480x832_h200_shapes.yaml.xz > /tmp/wan14b_shapes.yaml
for stage in $stages; do
  start=$(date +%s)
  timeout 290 python3 -m ncu_classify try /tmp/wan14b_cards.json --shapes /tmp/wan14b_shapes.yaml \
    -o "$OUT/tries_$stage" --stage "$stage" --top "$top" --repeat "$repeat" > "$OUT/try_$stage.txt" 2>&1
  echo "try $stage rc $? in $(( $(date +%s) - start )) s"
  tail -60 "$OUT/try_$stage.txt"
  rm -f "$OUT/tries_$stage"/outputs/*.f32  # random floats: 1 MiB each, they do not compress
  for log in "$OUT/tries_$stage"/raw/*.ncu.log; do tail -n 3 "$log"; done
  (cd "$OUT" && tar cJf "tries_$stage.tar.xz" "tries_$stage" && rm -rf "tries_$stage")
done
ls -la "$OUT"  # few files come back: one tarball per stage
