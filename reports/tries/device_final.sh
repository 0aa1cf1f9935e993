#!/bin/bash
# The closing H200 run of issue 39's session: the per-op tries of both stages again (the
# committed fixtures come from it), the program-wide ladder of the decode (bf16 alone,
# channels-last alone), each under 290 s. With $OUT set and the wheels in .whl/.
set -u
bash reports/tries/device_try.sh 10 5 vae dit 2>&1 | grep -E "^try |planned|winners save"
for move in bf16 channels_last; do
  bash reports/tries/device_program.sh "$move" vae 3 2>&1 | grep -E "^try|saves"
  mv "$OUT/program_vae.tar.xz" "$OUT/program_vae_$move.tar.xz"
  mv "$OUT/program_vae.txt" "$OUT/program_vae_$move.txt"
done
ls -la "$OUT"
