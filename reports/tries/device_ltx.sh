#!/bin/bash
# `try` on a model the project did not write (issue 39): LTX-Video from diffusers (the 2B DiT
# and its causal VAE, default configs, random weights; fixtures/models/record_ltx.py) at
# 480x704, 9 frames, through the whole tool on the H200: record (with chains), capture,
# classify, then `try` on each stage: its top 5 moves, its 5 largest chains, its 3 largest pad
# folds. From the repository root, with $OUT set and the wheels in .whl/ and .whl_rec/.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
W=/tmp/ltx; mkdir -p $W
step() { local start; start=$(date +%s); "$@"; echo "rc $? in $(( $(date +%s) - start )) s: $2"; }
step timeout 120 python3 -m ncu_classify record -o $W/shapes.yaml --stage 'transformer*=dit' \
  --stage 'vae*=vae' --stage '=output' -- python3 fixtures/models/record_ltx.py --height 480 \
  --width 704 --frames 9 --device cuda > $W/record.log 2>&1
tail -1 $W/record.log
step timeout 200 python3 -m ncu_classify capture --shapes $W/shapes.yaml -o $W/cap --one-process \
  > $W/capture.log 2>&1
tail -2 $W/capture.log
step timeout 60 python3 -m ncu_classify classify $W/cap -o $W/cards.json > $W/classify.log 2>&1
for stage in dit vae; do
  step timeout 150 python3 -m ncu_classify try $W/cards.json --shapes $W/shapes.yaml \
    -o $W/tries_$stage --stage $stage --top 5 --chains 5 --folds 3 --repeat 3 > $W/try_$stage.txt 2>&1
  grep -v "^       " $W/try_$stage.txt | tail -25
  rm -f $W/tries_$stage/outputs/*.f32
done
(cd $W && for f in cap/*.ncu-rep tries_*/raw/*.ncu-rep; do xz -T16 -6 "$f"; done
 rm -rf cap/.work tries_*/raw/.work
 tar cJf $OUT/ltx.tar.xz shapes.yaml cards.json ./*.log ./*.txt cap tries_*)
