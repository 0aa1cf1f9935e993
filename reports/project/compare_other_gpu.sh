#!/bin/bash
# Issue 42 part 2, on the CPU: the captures of reports/project/device_other_gpu.sh (FOLDER,
# unpacked: w480x832/, w704x1280/, wan14/) against the H200's committed ones, for GPU (its name
# in ncu_classify/data/gpus.yaml): each side classified, the H200 cards projected onto GPU, and
# two diffs per workload: measured H200 -> measured GPU (flips, time per stage and class), and
# projected -> measured GPU (what the model gets wrong). Writes into OUT (default
# reports/project/GPU): the cards (h200_*, measured_* on GPU, projected_*), summaries per
# stage (CSV) and the diffs (Markdown). Tried on the CPU with the H200's own captures as the
# "other" GPU and GPU=H200: every shape `same`, x1.000.
#   bash reports/project/compare_other_gpu.sh FOLDER GPU [OUT]
set -eu
DIR=$1; GPU=$2; OUT=${3:-reports/project/$GPU}
mkdir -p "$OUT"
pairs="480x832:fixtures/workload_h200_480x832:$DIR/w480x832
704x1280:fixtures/workload_h200_704x1280:$DIR/w704x1280
wan14b:fixtures/record_h200_wan14b:$DIR/wan14"
for pair in $pairs; do
  IFS=: read -r name h200 other <<< "$pair"
  [ -d "$other" ] || { echo "$name: no capture at $other"; continue; }
  ncu-classify classify "$h200" -o "$OUT/h200_$name.json" --rules rules/roofline.yaml 2>/dev/null
  ncu-classify classify "$other" -o "$OUT/measured_$name.json" --rules rules/roofline.yaml
  ncu-classify project "$OUT/h200_$name.json" --to "$GPU" -o "$OUT/projected_$name.json"
  for side in h200 measured projected; do
    ncu-classify summary "$OUT/${side}_$name.json" --by stage -o "$OUT/summary_${side}_$name.csv"
  done
  ncu-classify diff "$OUT/h200_$name.json" "$OUT/measured_$name.json" --format md \
    -o "$OUT/diff_measured_$name.md"
  ncu-classify diff "$OUT/projected_$name.json" "$OUT/measured_$name.json" --format md \
    -o "$OUT/diff_projected_$name.md"
  echo "$name: $OUT/diff_measured_$name.md, $OUT/diff_projected_$name.md"
done
