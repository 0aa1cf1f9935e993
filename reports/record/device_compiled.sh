#!/bin/bash
# Compiled regions on the H200 (issue 40): fixtures/models/record_block.py (a causal-VAE
# residual block, bf16, channels_last_3d, 1x128x8x240x360) with `--compile`: record, the
# independent torch.profiler check of the plain compiled program (after one warm-up call),
# capture and classify of the recording. With $OUT set and the wheels in .whl/.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
W=/tmp/block; mkdir -p $W
exec 3>&1  # step's own line goes to the script's output, not to a command's redirected one
step() { local start; start=$(date +%s); "$@"; echo "rc $? in $(( $(date +%s) - start )) s: ${*:3:2}" >&3; }
step timeout 70 python3 -m ncu_classify record -o $W/shapes.yaml -- python3 \
  fixtures/models/record_block.py --compile > $W/record.log 2>&1
tail -1 $W/record.log
step timeout 60 python3 reports/record/profile_program.py fixtures/models/record_block.py \
  --compile --warmup 1 > $W/profile.json 2> $W/profile.err
grep -A1 all_kernels_us $W/profile.json
export PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python
step timeout 80 python3 -m ncu_classify capture --shapes $W/shapes.yaml -o $W/cap > $W/capture.log 2>&1
tail -3 $W/capture.log
step timeout 20 python3 -m ncu_classify classify $W/cap -o $W/cards.json > $W/classify.log 2>&1
python3 -m ncu_classify summary $W/cards.json 2>&1 | head -30
(cd $W && rm -rf cap/.work && for f in cap/*.ncu-rep; do xz -T16 -6 "$f"; done
 tar cJf $OUT/block.tar.xz shapes.yaml cards.json ./*.log profile.* cap)
