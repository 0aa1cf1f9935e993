#!/bin/bash
# The DiT's real-program check (issue 39, item 5): the move `try` measures for the DiT's device
# ops is Inductor (fused chains between its GEMMs and attention); the real program's move is
# `torch.compile` of the transformer. `try --chains` measures the recording's DiT chains eagerly
# and compiled (the 14B DiT cut to one block: reports/tries/wan_chains_480x832_h200_shapes.yaml.xz);
# then reports/record/profile_program.py (plain torch.profiler, no recorder) measures the DiT
# step's kernel time of record_wan.py as it runs by default and with `--compile transformer`,
# each after one unmeasured warm-up inference (Inductor compiles and tunes there), twice each.
# With $OUT set and the wheels in .whl/ and .whl_rec/, from the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
program="fixtures/models/record_wan.py --height 480 --width 832 --frames 9 --device cuda \
  --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json --layers 1 --warmup 1"
for run in eager_1 compiled_1 eager_2 compiled_2; do
  extra=""; [[ $run == compiled* ]] && extra="--compile transformer"
  start=$(date +%s)
  # shellcheck disable=SC2086  # the program's words
  timeout 300 python3 reports/record/profile_program.py $program $extra > "$OUT/profile_$run.json" \
    2> "$OUT/profile_$run.err"
  echo "profile $run rc $? in $(( $(date +%s) - start )) s"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['kernel_us_by_section'])" \
    "$OUT/profile_$run.json"
done
xz -dkc reports/tries/wan_chains_480x832_h200_shapes.yaml.xz > /tmp/chains.yaml
export PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python
python3 -m ncu_classify classify fixtures/record_h200_wan14b -o /tmp/wan14b_cards.json > /dev/null
start=$(date +%s)
timeout 280 python3 -m ncu_classify try /tmp/wan14b_cards.json --shapes /tmp/chains.yaml \
  -o "$OUT/tries_dit_chains" --stage dit --top 1 --chains 6 --repeat 3 > "$OUT/try.txt" 2>&1
echo "try rc $? in $(( $(date +%s) - start )) s"; tail -30 "$OUT/try.txt"
rm -f "$OUT"/tries_dit_chains/outputs/*.f32
(cd "$OUT" && tar cJf tries_dit_chains.tar.xz tries_dit_chains && rm -rf tries_dit_chains)
(cd "$OUT" && tar cJf profiles.tar.xz profile_* && rm -f profile_*)
