#!/bin/bash
# Compiled regions and CUDA graphs on the H200 (issue 40): fixtures/models/record_block.py (a
# causal-VAE residual block, bf16, channels_last_3d, 1x128x8x240x360) run `--graph`ed and
# `--compile`d: each recorded, checked independently against the plain program under
# torch.profiler (after the same warm-ups), captured and classified; the GPU test of CUDA
# graphs in record; then, in the time left of $BUDGET seconds (default 470), the compiled Wan
# 2.1 decode recorded again (reports/record/device_compiled_wan.sh's program). Outputs are
# packed whatever stopped; $WAYS picks the ways (default "graph compile"). With $OUT set and the wheels in .whl/, .whl_rec/ and .whl_test/.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_test/*.whl \
  .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
NCU_PY=/opt/nvidia/nsight-compute/2025.3.1/extras/python
START=$(date +%s); BUDGET=${BUDGET:-470}
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
pack() {
  cd /tmp && for f in block_*/cap/*.ncu-rep; do [ -f "$f" ] && xz -T16 -6 "$f"; done
  rm -rf block_*/cap/.work; tar cJf $OUT/block.tar.xz block_* pytest.log wanr 2>/dev/null
}
trap pack EXIT
exec 3>&1  # step's own line goes to the script's output, not to a command's redirected one
step() { local start; start=$(date +%s); "$@"; echo "rc $? in $(( $(date +%s) - start )) s: ${*:3:3}" >&3; }
for way in ${WAYS:-graph compile}; do
  W=/tmp/block_$way; mkdir -p $W; echo "== $way"
  step timeout 70 python3 -m ncu_classify record -o $W/shapes.yaml -- python3 \
    fixtures/models/record_block.py --$way > $W/record.log 2>&1
  tail -1 $W/record.log
  step timeout 60 python3 reports/record/profile_program.py fixtures/models/record_block.py \
    --$way --warmup 1 > $W/profile.json 2> $W/profile.err
  grep -A1 all_kernels_us $W/profile.json
  step timeout 80 env PYTHONPATH=$PYTHONPATH:$NCU_PY python3 -m ncu_classify capture \
    --shapes $W/shapes.yaml -o $W/cap > $W/capture.log 2>&1
  tail -1 $W/capture.log
  step timeout 20 env PYTHONPATH=$PYTHONPATH:$NCU_PY python3 -m ncu_classify classify $W/cap \
    -o $W/cards.json > $W/classify.log 2>&1
  python3 -m ncu_classify summary $W/cards.json 2>&1 | grep coverage | cut -c1-400
  if [ $way = graph ]; then
    step timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py \
      -k "cuda_graph or eager_code" > /tmp/pytest.log 2>&1
    tail -1 /tmp/pytest.log
  fi
done
W=/tmp/wanr; mkdir -p $W
program="fixtures/models/record_wan.py --height 480 --width 832 --frames 9 --device cuda \
  --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json --layers 1 --compile vae.decoder \
  --warmup 1"
echo "== wan, $(left) s left"
# shellcheck disable=SC2086  # the program's words
[ "$(left)" -gt 60 ] && step timeout "$(left)" python3 -m ncu_classify record \
  -o $W/shapes.yaml --stage 'transformer*=dit' --stage 'vae*=vae' --stage '=output' -- \
  python3 $program > $W/record.log 2>&1
tail -1 $W/record.log | cut -c1-700
