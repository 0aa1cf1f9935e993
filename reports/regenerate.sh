#!/usr/bin/env bash
# Regenerate everything under reports/ (and the committed workload cards) from fixtures/:
# cards, summaries, the comparisons of reports/diff and the HTML/Markdown pages of
# reports/html (the commands in reports/html/make.txt). The HTML pages and the cards files of
# reports/record and reports/drill/*_drilled.json (the tests classify the same captures
# themselves: tests/conftest.py DERIVED) are written, not committed (.gitignore). Tests fail
# when any committed output is stale.
# Run from anywhere with ncu-classify installed: bash reports/regenerate.sh
# (The screenshot reports/html/workload_h200_480x832.png is made by reports/html/screenshot.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
# Stamp every output with the time of the last commit of the raw data (not of the cards made
# from it, nor of the scripts and notes kept beside it, nor of a commit whose message says
# `Raw-data: unchanged`: one that rewrote reports without a counter changing, fixtures/README.md),
# so that a rerun changes only what the code changed (clock.py reads it). The tries captures
# (fixtures/tries_h200) and the compiled ones (fixtures/compiled_h200, compiled_wan_h200,
# compiled_wan_h100) feed none of these outputs.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct --invert-grep \
  --grep='^Raw-data: unchanged$' -- fixtures ':!fixtures/*/cards.json' ':!fixtures/**/*.sh' \
  ':!fixtures/**/*.py' ':!fixtures/*.md' ':!fixtures/tries_h200' ':!fixtures/compiled_h200' \
  ':!fixtures/compiled_wan_h200' ':!fixtures/compiled_wan_h100')}
ncu-classify classify fixtures/smoke_h200 fixtures/user_set_full -o reports/smoke_h200_cards.json \
  --jobs 2 >/dev/null
ncu-classify summary reports/smoke_h200_cards.json --csv -o reports/smoke_h200_summary.csv
for resolution in 480x832 704x1280 480x832_40heads 704x1280_40heads; do
  folder=fixtures/workload_h200_$resolution
  [ -d "$folder" ] || continue
  ncu-classify classify "$folder" -o "$folder/cards.json" --jobs 2 >/dev/null
  ncu-classify summary "$folder/cards.json" --csv -o "reports/workload_h200_${resolution}_summary.csv"
  ncu-classify summary "$folder/cards.json" --by shape --csv \
    -o "reports/workload_h200_${resolution}_shapes.csv"
  ncu-classify summary "$folder/cards.json" --by kernel --csv \
    -o "reports/workload_h200_${resolution}_kernel_classes.csv"
done
ncu-classify classify fixtures/record_h200 -o reports/record/cards_wan_480x832.json --jobs 2 >/dev/null
ncu-classify summary reports/record/cards_wan_480x832.json --csv -o reports/record/summary_wan_480x832.csv
ncu-classify summary reports/record/cards_wan_480x832.json --by shape --csv \
  -o reports/record/shapes_wan_480x832.csv
# The same program with every device op recorded and captured (issue 17)
cards=reports/record/cards_wan14b_every_op_480x832.json
ncu-classify classify fixtures/record_h200_wan14b -o "$cards" --jobs 2 >/dev/null
for view in stage shape kernel coverage fidelity; do
  ncu-classify summary "$cards" --by "$view" --csv -o "reports/record/wan14b_every_op_${view}.csv"
done
# Drill-downs (issue 18): the workload under rules/roofline.yaml with its drill-down captures
# merged, and the before/after table of all three drilled captures
for resolution in 480x832 704x1280; do
  cards=reports/drill/cards_${resolution}_drilled.json
  ncu-classify classify "fixtures/workload_h200_$resolution" "fixtures/drill_h200_$resolution" \
    --rules rules/roofline.yaml -o "$cards" --jobs 2 >/dev/null
  ncu-classify summary "$cards" --by shape --csv -o "reports/drill/shapes_${resolution}_drilled.csv"
done
python reports/drill/before_after.py > reports/drill/before_after.md
# Headroom (issue 19): the next moves of the VAE comparison and of the recorded Wan 14B, and
# the conv floor table
for name in w480_gpu0 vae_bf16_cl3d; do
  ncu-classify next "reports/diff/cards/$name.json" -o "reports/headroom/next_$name.md"
  ncu-classify next "reports/diff/cards/$name.json" -o "reports/headroom/next_$name.json"
done
ncu-classify next reports/record/cards_wan14b_every_op_480x832.json -o reports/headroom/next_wan14b.md
ncu-classify next reports/record/cards_wan14b_every_op_480x832.json -o reports/headroom/next_wan14b.csv
python reports/headroom/conv_floor.py > reports/headroom/conv_floor.md
# Projections onto other GPUs of the table (issue 42; no other GPU kind has captured yet): the
# recorded Wan 14B cards (recorded ops, every op) onto an H100 SXM and an A100; what changes
for gpu in H100-SXM A100-SXM4-80GB; do
  for name in wan_480x832 wan14b_every_op_480x832; do
    cards="reports/project/cards_${name}_${gpu}.json"
    ncu-classify project "reports/record/cards_$name.json" --to "$gpu" -o "$cards" >/dev/null
    ncu-classify summary "$cards" --csv -o "reports/project/summary_${name}_${gpu}.csv"
  done
  ncu-classify diff reports/record/cards_wan_480x832.json \
    "reports/project/cards_wan_480x832_${gpu}.json" -o "reports/project/diff_wan_480x832_${gpu}.md"
done
bash reports/diff/make.sh
bash reports/repeat/make.sh
while IFS= read -r command; do
  eval "$command" >/dev/null
done < reports/html/make.txt
