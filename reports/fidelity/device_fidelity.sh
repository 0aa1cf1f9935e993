#!/bin/bash
# Typed shapes as the program ran them, on the H200 (issue 41 item 3): the issue's 1x1x1 conv3d
# fed a frames-first strided view ran 3 kernels in the program (a copy first) and 2 in the
# replay; record now keeps typed inputs' strides and storage offsets and the replay builds that
# layout. Two programs, bf16, defaults: fixtures/models/record_strided_conv.py (three 384->384
# 1x1x1 conv3d on 1x384x16x120x208: a frames-first `permute` view, frames 1.. of a clip (an
# offset), a contiguous tensor) and fixtures/models/record_masked.py (SDPA with a padding
# mask). Each recorded, checked independently under torch.profiler
# (reports/record/profile_program.py), captured, classified; the summaries by coverage and by
# fidelity printed, fidelity.csv kept; for the convs, the kernels a call ran in the program
# (real_kernels) beside those the capture replayed. Each step has its timeout, capped by what
# is left of $BUDGET seconds (default 310). Outputs packed whatever stopped, as one
# fidelity.tar.xz. With $OUT set and the wheels in .whl/, from the repository root.
set -u
START=$(date +%s); BUDGET=${BUDGET:-310}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
NCU_PY=/opt/nvidia/nsight-compute/2025.3.1/extras/python
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
# a step's timeout: its own, or what is left of the budget less 10 s for the packing
upto() { local rest; rest=$(( $(left) - 10 )); [ "$rest" -lt "$1" ] && echo "$rest" || echo "$1"; }
pack() {
  cd /tmp && for f in fid_*/cap/*.ncu-rep; do [ -f "$f" ] && xz -T16 -6 "$f"; done
  rm -rf fid_*/cap/.work; tar cJf "$OUT/fidelity.tar.xz" fid_*/ 2>/dev/null
}
trap pack EXIT
exec 3>&1  # step's own line goes to the script's output, not to a command's redirected one
step() {  # step LABEL timeout SECONDS COMMAND...: its exit status and time, or skipped
  local label=$1 start; shift; start=$(date +%s)
  if [ "$2" -lt 5 ]; then echo "skipped, $(left) s left: $label" >&3; return 124; fi
  "$@"; echo "rc $? in $(( $(date +%s) - start )) s: $label" >&3
}
convs() {  # the recorded conv3d shapes: the program's kernels a call beside the replay's
  python3 - "$1" <<'EOF'
import json, re, sys
from pathlib import Path

from ncu_classify.shapes.file import load_shapes

w = Path(sys.argv[1])
replayed = {}
if (w / "capture.log").exists():
    for line in (w / "capture.log").read_text().splitlines():
        m = re.match(r"(\S+)\s+(\S+)\s+kernels=(\S+)", line)
        if m:
            replayed[m[2]] = (m[1], m[3])
cards = {}
if (w / "cards.json").exists():
    for card in json.loads((w / "cards.json").read_text())["cards"]:
        cards[card["group"]] = card
for e in load_shapes(w / "shapes.yaml").entries():
    if e.shape.op != "conv3d":
        continue
    layout = e.shape.layout and {k: (v.strides, v.offset) for k, v in e.shape.layout.items()}
    status, kernels = replayed.get(e.group, ("-", "?"))
    card = cards.get(e.group, {})
    print(f"{e.group}\n  layout {layout}\n  program: real_kernels={e.shape.real_kernels}"
          f" real_us={e.shape.real_us} {e.shape.real_kernel_names}")
    names = [k["kernel"][:70] for k in card.get("kernels", [])]
    print(f"  replay: {status} kernels={kernels} summed_us={card.get('summed_kernel_us')}"
          f" {names}")
EOF
}
for program in fixtures/models/record_strided_conv.py fixtures/models/record_masked.py; do
  name=$(basename "$program" .py); W=/tmp/fid_${name#record_}; mkdir -p "$W"
  echo "== $name, $(left) s left"
  step record timeout "$(upto 90)" python3 -m ncu_classify record -o "$W/shapes.yaml" -- python3 \
    "$program" > "$W/record.log" 2>&1
  tail -1 "$W/record.log" | cut -c1-600
  step profile timeout "$(upto 60)" python3 reports/record/profile_program.py "$program" \
    > "$W/profile.json" 2> "$W/profile.err"
  grep -E -A3 '"all_kernels_us"' "$W/profile.json"
  [ -f "$W/shapes.yaml" ] || continue
  step capture timeout "$(upto 150)" env PYTHONPATH="$PYTHONPATH:$NCU_PY" python3 -m ncu_classify \
    capture --shapes "$W/shapes.yaml" -o "$W/cap" > "$W/capture.log" 2>&1
  grep -v '^ok ' "$W/capture.log" | tail -3 | cut -c1-400
  step classify timeout "$(upto 30)" env PYTHONPATH="$PYTHONPATH:$NCU_PY" python3 -m ncu_classify \
    classify "$W/cap" -o "$W/cards.json" > "$W/classify.log" 2>&1
  tail -1 "$W/classify.log" | cut -c1-300
  [ -f "$W/cards.json" ] || continue
  python3 -m ncu_classify summary "$W/cards.json" --by coverage 2>&1 | cut -c1-300
  python3 -m ncu_classify summary "$W/cards.json" --by fidelity 2>&1 | cut -c1-300
  python3 -m ncu_classify summary "$W/cards.json" --by fidelity --csv -o "$W/fidelity.csv"
  if [ "$name" = record_strided_conv ]; then convs "$W"; fi
done
echo "done in $(( $(date +%s) - START )) s"
