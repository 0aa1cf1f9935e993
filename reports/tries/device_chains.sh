#!/bin/bash
# Fusion moves on the H200 (issue 39): record_wan.py recorded with its chains (DiT cut to one
# block, VAE as by default: fp32 NCDHW), then `try` on the decode's largest chains, each eagerly
# and under torch.compile. With $OUT set and the wheels in .whl/ and .whl_rec/.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl .whl_rec/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
start=$(date +%s)
timeout 120 python3 -m ncu_classify record -o /tmp/chains.yaml --stage 'transformer*=dit' \
  --stage 'vae*=vae' --stage '=output' -- python3 fixtures/models/record_wan.py --height 480 \
  --width 832 --frames 9 --device cuda --dit-dtype bf16 --dit wan2.1_t2v_14b_transformer.json \
  --layers 1 > "$OUT/record.txt" 2>&1
echo "record rc $? in $(( $(date +%s) - start )) s"; tail -2 "$OUT/record.txt"
xz -T8 -6 -k /tmp/chains.yaml && cp /tmp/chains.yaml.xz "$OUT/"
export PYTHONPATH=$PYTHONPATH:/opt/nvidia/nsight-compute/2025.3.1/extras/python
python3 -m ncu_classify classify fixtures/record_h200_wan14b -o /tmp/wan14b_cards.json > /dev/null
start=$(date +%s)
timeout 270 python3 -m ncu_classify try /tmp/wan14b_cards.json --shapes /tmp/chains.yaml \
  -o "$OUT/tries_chains" --stage vae --top 1 --chains "${1:-6}" --repeat 3 > "$OUT/try.txt" 2>&1
echo "try rc $? in $(( $(date +%s) - start )) s"; tail -30 "$OUT/try.txt"
for log in "$OUT"/tries_chains/raw/*.ncu.log; do tail -n 3 "$log"; done
rm -f "$OUT"/tries_chains/outputs/*.f32
(cd "$OUT" && tar cJf tries_chains.tar.xz tries_chains && rm -rf tries_chains)
