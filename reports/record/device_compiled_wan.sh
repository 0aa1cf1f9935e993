#!/bin/bash
# Issue 40 on the H200: the Wan 2.1 VAE decode with its decoder under torch.compile
# (record_wan.py --compile vae.decoder, DiT cut to one block, 480x832, 9 frames, one warm-up
# inference first, left out of the recording with --start-at transformer:2: the DiT runs once
# an inference), recorded, checked per inference against the
# plain compiled program (torch.profiler after the same warm-up; dynamo's graph breaks and
# recompiles logged in both runs), captured largest first to --coverage $COVERAGE (default
# 99.5) and classified; the outputs are packed whatever stopped. With $OUT set and the wheels
# in .whl/ and .whl_rec/, from the repository root. The capture needs about 20 minutes of ncu
# (1,141 kernels in 27 graphs, 0.76 s a kernel measured): a later command resumes it when the
# last one's wanc.tar is unpacked into .wanc/ (git-ignored) and carried (`carry: .wanc`).
# $BUDGET: the seconds this script may take (default 540). Inductor's cache is in .inductor/
# (git-ignored), kept by the machine between calls while it stays warm.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl \
  2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
W=/tmp/wanc; mkdir -p $W
START=$(date +%s)
pack() {
  (cd $W && rm -rf cap/.work && for f in cap/*.ncu-rep; do [ -f "$f" ] && xz -T16 -2 "$f"; done
   tar cf $OUT/wanc.tar shapes.yaml cards.json ./*.log ./*.err profile.json cap 2>/dev/null)
}
trap pack EXIT
exec 3>&1
step() { local start; start=$(date +%s); "$@"; echo "rc $? in $(( $(date +%s) - start )) s: ${*:3:3}" >&3; }
program="fixtures/models/record_wan.py --height 480 --width 832 --frames 9 --device cuda \
  --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json --layers 1 --compile vae.decoder \
  --warmup 1"
RESUME=()
if [ -f .wanc/shapes.yaml ]; then  # a later command: the capture carried back in .wanc/, resumed
  cp -r .wanc/. $W/; RESUME=(--resume); echo "resuming: $(ls $W/cap)"
else
export TORCH_LOGS=graph_breaks,recompiles
# shellcheck disable=SC2086  # the program's words
step timeout 210 python3 -m ncu_classify record -o $W/shapes.yaml --stage 'transformer*=dit' \
  --stage 'vae*=vae' --stage '=output' --start-at transformer:2 -- python3 $program \
  > $W/record.log 2>&1
tail -1 $W/record.log | cut -c1-900
grep -c "Graph break\|Recompiling" $W/record.log
# shellcheck disable=SC2086
step timeout 120 python3 reports/record/profile_program.py $program > $W/profile.json \
  2> $W/profile.err
grep -c "Graph break\|Recompiling" $W/profile.err
grep -A4 kernel_us_by_section $W/profile.json
unset TORCH_LOGS
fi
# the capture stops 90 s before $BUDGET: classify and the packing of GB-sized reports need it
# (a command killed at its limit runs no trap: the first session's capture was lost so)
left=$(( ${BUDGET:-540} - 90 - ($(date +%s) - START) ))
if [ $left -lt 30 ]; then echo "$left s left: no capture in this command"; else
step timeout $left env PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python \
  python3 -m ncu_classify capture --shapes $W/shapes.yaml -o $W/cap --coverage ${COVERAGE:-99.5} \
  "${RESUME[@]}" > $W/capture.log 2>&1
fi
tail -2 $W/capture.log
step timeout 30 env PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python \
  python3 -m ncu_classify classify $W/cap -o $W/cards.json > $W/classify.log 2>&1
python3 -m ncu_classify summary $W/cards.json 2>&1 | tail -5 | cut -c1-600
