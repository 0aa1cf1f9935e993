#!/usr/bin/env bash
# Regenerate reports/diff/ from the committed captures: the cards of each H200 capture under
# fixtures/diff_h200/ (made by reports/diff/capture_inputs.sh on the 2-GPU host), then the three
# comparisons of issue 9, each as Markdown (for people), JSON (schema: `ncu-classify schema
# --diff`) and CSV. Run from anywhere with ncu-classify installed: bash reports/diff/make.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=reports/diff
mkdir -p "$out/cards"
for name in w480_gpu0 w480_gpu1 vae_bf16_cl3d dit_fp32_tf32 dit_fp32_notf32; do
  ncu-classify classify "fixtures/diff_h200/$name" -o "$out/cards/$name.json" --jobs 2 >/dev/null
done
compare() {  # compare NAME BASELINE CANDIDATE [diff options...]
  local name=$1 baseline=$2 candidate=$3
  shift 3
  for fmt in md json csv; do
    ncu-classify diff "$baseline" "$candidate" "$@" --format "$fmt" -o "$out/$name.$fmt" \
      >/dev/null 2>&1
  done
}
# (a) the legacy 480x832 cards (another 132-SM Hopper, another software stack) against the
#     H200 capture of the same shapes, both judged under the legacy rules
compare legacy_vs_h200_480x832 fixtures/legacy/legacy_cards_480x832.json \
  "$out/cards/w480_gpu0.json" --reclassify rules/default.yaml
# (b) settings that must move verdicts: VAE convs fp32/TF32 NCDHW -> bf16 channels_last_3d;
#     DiT linears in fp32 with TF32 off -> on
compare vae_fp32_vs_bf16_cl3d "$out/cards/w480_gpu0.json" "$out/cards/vae_bf16_cl3d.json" \
  --stage vae
compare dit_fp32_tf32_off_vs_on "$out/cards/dit_fp32_notf32.json" "$out/cards/dit_fp32_tf32.json"
# (c) the same workload captured at the same time on GPU 0 and GPU 1 of one host: noise only
compare h200_gpu0_vs_gpu1 "$out/cards/w480_gpu0.json" "$out/cards/w480_gpu1.json"
# and against the committed capture of the same shapes (fixtures/workload_h200_480x832), the
# third capture behind the packaged noise tolerances
compare h200_gpu0_vs_committed "$out/cards/w480_gpu0.json" \
  fixtures/workload_h200_480x832/cards.json
compare h200_gpu1_vs_committed "$out/cards/w480_gpu1.json" \
  fixtures/workload_h200_480x832/cards.json
