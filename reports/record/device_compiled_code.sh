#!/bin/bash
# Issue 40 on the H200: do the replayed graphs of the compiled Wan 2.1 decode compile to the
# program's Triton kernels? `compiled_code.py` records the program of device_compiled_wan.sh
# (its decoder under torch.compile, 480x832, 9 frames, one warm-up inference left out) with
# Inductor's output code of each compile kept, replays every compiled shape compiled on the
# GPU and compares the code kernel by kernel; the differing kernels' sources go to $OUT/diff.
# With $OUT set and the wheels in .whl/ and .whl_rec/, from the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl \
  2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
timeout "${BUDGET:-520}" python3 reports/record/compiled_code.py --device cuda \
  -o "$OUT/shapes.yaml" --diff "$OUT/diff" --record=--start-at=transformer:2 \
  "--record=--stage=transformer*=dit" "--record=--stage=vae*=vae" "--record=--stage==output" \
  -- python3 fixtures/models/record_wan.py --height 480 --width 832 --frames 9 --device cuda \
  --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json --layers 1 --compile vae.decoder \
  --warmup 1 > "$OUT/compiled_code.log" 2>&1
echo "rc $?"
grep '^{\|compiled shapes' "$OUT/compiled_code.log" | cut -c1-400
xz -T16 -2 "$OUT/shapes.yaml" 2>/dev/null
