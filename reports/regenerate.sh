#!/usr/bin/env bash
# Regenerate everything under reports/ (and the committed workload cards) from fixtures/.
# Run from the repository root with ncu-classify installed: bash reports/regenerate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
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
done
