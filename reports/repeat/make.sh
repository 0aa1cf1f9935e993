#!/usr/bin/env bash
# Regenerate reports/repeat/ (issue 20): the committed --repeat 5 capture of the 480x832
# workload (fixtures/repeat_h200) classified under rules/roofline.yaml, compared with a second
# --repeat 5 capture of the same workload (nothing may be beyond noise) and the fp32 DiT with
# TF32 off against on (a real change), and the spread table per metric. The cards of the other
# captures are committed compressed (reports/repeat/cards/*.json.xz: their raw reports, 12 MB
# with xz, stay out of the repository). Run from anywhere: bash reports/repeat/make.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=reports/repeat
capture=fixtures/repeat_h200/w480_rep5  # unpacked here (git-ignored), as the tests do
[ -d "$capture" ] || tar xJf fixtures/repeat_h200/w480_rep5.tar.xz -C fixtures/repeat_h200
ncu-classify classify "$capture" -o "$out/cards/w480_rep5_a.json" --rules rules/roofline.yaml \
  --jobs 2 >/dev/null
for name in w480_rep5_b w480_rep5_counters dit_notf32_rep5 dit_tf32_rep5; do
  xz -dc "$out/cards/$name.json.xz" > "$out/cards/$name.json"
done
for fmt in md json; do
  ncu-classify diff "$out/cards/w480_rep5_a.json" "$out/cards/w480_rep5_b.json" --format "$fmt" \
    -o "$out/w480_rep5_a_vs_b.$fmt" >/dev/null 2>&1
  ncu-classify diff "$out/cards/dit_notf32_rep5.json" "$out/cards/dit_tf32_rep5.json" \
    --format "$fmt" -o "$out/dit_tf32_off_vs_on_rep5.$fmt" >/dev/null 2>&1
done
ncu-classify summary "$out/cards/w480_rep5_a.json" --by shape --csv -o "$out/w480_rep5_a_shapes.csv"
python3 "$out/spread.py" "$out/cards/w480_rep5_a.json" "$out/cards/w480_rep5_b.json" \
  "$out/cards/w480_rep5_counters.json" > "$out/spread_table.md"
