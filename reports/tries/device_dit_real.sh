#!/bin/bash
# The DiT's real-program check (issue 39, item 5). The moves `try` measures for the DiT's device
# ops are Inductor's: the chains of device ops between its GEMMs and attention, eagerly and
# compiled; the real program's move is `torch.compile` of the transformer. On the H200:
#  1. `record` (with chains) of record_wan.py's 14B DiT step at 480x832, cut to LAYERS blocks
#     (default 4), no decode;
#  2. reports/record/profile_program.py (plain torch.profiler, no recorder) measures the DiT step's
#     kernel time as the program runs by default and with `--compile transformer`, each after one
#     unmeasured warm-up inference (Inductor compiles and tunes there), twice each;
#  3. `try --chains 10` on that recording's DiT.
# With $OUT set and the wheels in .whl/ and .whl_rec/, from the repository root.
set -u
layers=${1:-4}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
program="fixtures/models/record_wan.py --height 480 --width 832 --frames 9 --device cuda \
  --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json --layers $layers --no-decode"
shapes=/tmp/dit_$layers.yaml
start=$(date +%s)
# shellcheck disable=SC2086  # the program's words
timeout 150 python3 -m ncu_classify record -o "$shapes" --stage 'transformer*=dit' --stage '=output' -- \
  python3 $program > "$OUT/record.txt" 2>&1
echo "record rc $? in $(( $(date +%s) - start )) s"; tail -2 "$OUT/record.txt"
xz -T8 -6 -kc "$shapes" > "$OUT/wan_dit${layers}_480x832_h200_shapes.yaml.xz"
for run in eager_1 compiled_1 eager_2 compiled_2; do
  extra=""; [[ $run == compiled* ]] && extra="--compile transformer"
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout 240 python3 reports/record/profile_program.py $program --warmup 1 $extra \
    > "$OUT/profile_$run.json" 2> "$OUT/profile_$run.err"
  echo "profile $run rc $? in $(( $(date +%s) - start )) s"
  grep -A3 kernel_us_by_section "$OUT/profile_$run.json" | tr -d '\n '; echo
done
export PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python
python3 -m ncu_classify classify fixtures/record_h200_wan14b -o /tmp/wan14b_cards.json > /dev/null
start=$(date +%s)
timeout 280 python3 -m ncu_classify try /tmp/wan14b_cards.json --shapes "$shapes" \
  -o "$OUT/tries_dit_chains" --stage dit --top 1 --chains 10 --repeat 3 > "$OUT/try.txt" 2>&1
echo "try rc $? in $(( $(date +%s) - start )) s"; grep -v "^       \|^  [0-9]" "$OUT/try.txt" | tail -8
rm -f "$OUT"/tries_dit_chains/outputs/*.f32
(cd "$OUT" && tar cJf tries_dit_chains.tar.xz tries_dit_chains && rm -rf tries_dit_chains)
(cd "$OUT" && tar cJf profiles.tar.xz profile_* record.txt && rm -f profile_* record.txt)
