#!/bin/bash
# Compiled regions and CUDA graphs on the H200 (issue 40): fixtures/models/record_block.py (a
# causal-VAE residual block, bf16, channels_last_3d, 1x128x8x240x360) run `--compile`d and
# `--graph`ed: each recorded, checked independently against the plain program under
# torch.profiler (after the same warm-ups), captured and classified; then the GPU test of
# CUDA graphs in record. With $OUT set and the wheels in .whl/ and .whl_test/, from the
# repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_test/*.whl \
  2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
exec 3>&1  # step's own line goes to the script's output, not to a command's redirected one
step() { local start; start=$(date +%s); "$@"; echo "rc $? in $(( $(date +%s) - start )) s: ${*:3:2}" >&3; }
NCU_PY=/opt/nvidia/nsight-compute/2025.3.1/extras/python
for way in compile graph; do
  W=/tmp/block_$way; mkdir -p $W; echo "== $way"
  step timeout 70 python3 -m ncu_classify record -o $W/shapes.yaml -- python3 \
    fixtures/models/record_block.py --$way > $W/record.log 2>&1
  tail -1 $W/record.log
  step timeout 60 python3 reports/record/profile_program.py fixtures/models/record_block.py \
    --$way --warmup 1 > $W/profile.json 2> $W/profile.err
  grep -A1 all_kernels_us $W/profile.json
  step timeout 80 env PYTHONPATH=$PYTHONPATH:$NCU_PY python3 -m ncu_classify capture \
    --shapes $W/shapes.yaml -o $W/cap > $W/capture.log 2>&1
  tail -2 $W/capture.log
  step timeout 20 env PYTHONPATH=$PYTHONPATH:$NCU_PY python3 -m ncu_classify classify $W/cap \
    -o $W/cards.json > $W/classify.log 2>&1
  python3 -m ncu_classify summary $W/cards.json 2>&1 | head -24
  (cd $W && rm -rf cap/.work && for f in cap/*.ncu-rep; do xz -T16 -6 "$f"; done)
done
step timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py \
  -k "cuda_graph or compiled" > /tmp/pytest.log 2>&1
tail -3 /tmp/pytest.log
(cd /tmp && tar cJf $OUT/block.tar.xz block_compile block_graph pytest.log)
