#!/bin/bash
# Issue 40 on the H200, the rest (run next): the Wan 2.1 VAE decode with its decoder under
# torch.compile (record_wan.py --compile vae.decoder, DiT cut to one block, 480x832, 9 frames),
# recorded, checked against the plain compiled program (torch.profiler, one warm-up inference),
# captured and classified. With $OUT set and the wheels in
# .whl/, .whl_rec/ and .whl_test/, from the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
W=/tmp/wanc; mkdir -p $W
exec 3>&1
step() { local start; start=$(date +%s); "$@"; echo "rc $? in $(( $(date +%s) - start )) s: ${*:3:2}" >&3; }
program="fixtures/models/record_wan.py --height 480 --width 832 --frames 9 --device cuda \
  --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json --layers 1 --compile vae.decoder"
# shellcheck disable=SC2086  # the program's words
step timeout 240 python3 -m ncu_classify record -o $W/shapes.yaml --stage 'transformer*=dit' \
  --stage 'vae*=vae' --stage '=output' -- python3 $program > $W/record.log 2>&1
tail -1 $W/record.log
# shellcheck disable=SC2086
step timeout 150 python3 reports/record/profile_program.py $program --warmup 1 > $W/profile.json \
  2> $W/profile.err
grep -A4 kernel_us_by_section $W/profile.json
export PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python
step timeout 240 python3 -m ncu_classify capture --shapes $W/shapes.yaml -o $W/cap \
  > $W/capture.log 2>&1
tail -2 $W/capture.log
step timeout 60 python3 -m ncu_classify classify $W/cap -o $W/cards.json > $W/classify.log 2>&1
python3 -m ncu_classify summary $W/cards.json 2>&1 | tail -4
(cd $W && rm -rf cap/.work && for f in cap/*.ncu-rep; do xz -T16 -6 "$f"; done
 tar cJf $OUT/wanc.tar.xz shapes.yaml cards.json ./*.log profile.* cap)
