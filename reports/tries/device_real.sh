#!/bin/bash
# The real program with the moves `try` measured applied (issue 39, item 5): record_wan.py's
# Wan 2.1 DiT (cut to one block: the VAE is the subject) and VAE decode at 480x832, 9 frames,
# recorded as it runs by default (VAE fp32 NCDHW) and with the VAE in bf16 and channels-last,
# each recording's per-stage kernel time measured by `record` (torch.profiler). On the device
# host, from the repository root, with $OUT set and the wheels in .whl/ and .whl_rec/:
#   bash reports/tries/device_real.sh "LABEL:ARGS" ...
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
for spec in "$@"; do
  label=${spec%%:*} extra=${spec#*:}
  start=$(date +%s)
  # shellcheck disable=SC2086  # the extra switches are words
  timeout 200 python3 -m ncu_classify record -o "$OUT/real_$label.yaml" --stage 'transformer*=dit' \
    --stage 'vae*=vae' --stage '=output' -- python3 fixtures/models/record_wan.py --height 480 \
    --width 832 --frames 9 --device cuda --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json \
    --layers 1 $extra > "$OUT/real_$label.txt" 2>&1
  echo "record $label rc $? in $(( $(date +%s) - start )) s"
  tail -4 "$OUT/real_$label.txt"
  xz -T8 -6 "$OUT/real_$label.yaml"
done
