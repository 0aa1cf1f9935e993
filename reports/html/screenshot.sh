#!/usr/bin/env bash
# The committed screenshot of the H200 480x832 report, by headless Chromium (apt install
# chromium). Run from anywhere: bash reports/html/screenshot.sh
set -euo pipefail
cd "$(dirname "$0")"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,3000 \
  --screenshot="$PWD/workload_h200_480x832.png" "file://$PWD/workload_h200_480x832.html" \
  2>/dev/null
