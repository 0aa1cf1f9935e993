# The H200 captures behind reports/diff/ (run on the 2-GPU host, from the repository root, with
# the wheels the host lacks in .whl_gpu: pydantic, ruamel.yaml, fa3-fwd, einops).
#  c) the whole 480x832 workload on GPU 0 and on GPU 1 at the same time, same flags;
#  b) after it, on GPU 0 the VAE convs in bf16 channels_last_3d, on GPU 1 the DiT linears in
#     fp32 with TF32 allowed and then not allowed.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl_gpu/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "from fa3_fwd_interface import flash_attn_func; print('fa3_fwd importable')" 2>&1 | tail -1
V=fixtures/shapes/variants
cap() {  # cap GPU SHAPES NAME
  python3 -m ncu_classify capture --shapes "$2" -o /tmp/cap/$3 --one-process --gpus "$1" > /tmp/cap/$3.out 2>&1
  echo "$3 on GPU $1: rc=$? $(tail -1 /tmp/cap/$3.out)"
}
mkdir -p /tmp/cap
start=$(date +%s)
( cap 0 fixtures/shapes/workload_480x832.yaml w480_gpu0; cap 0 $V/vae_480x832_bf16_cl3d.yaml vae_bf16_cl3d ) &
( cap 1 fixtures/shapes/workload_480x832.yaml w480_gpu1; cap 1 $V/dit_480x832_fp32_tf32.yaml dit_fp32_tf32; cap 1 $V/dit_480x832_fp32_notf32.yaml dit_fp32_notf32 ) &
wait
echo "all captures: $(( $(date +%s) - start )) s"
for d in /tmp/cap/*/; do
  n=$(basename $d)
  grep -h "passes" $d/*.ncu.log | sed 's/.*- //' | sort | uniq -c
  python3 -c "
import json,collections; m=json.load(open('$d/manifest.json')); print('$n', collections.Counter(s['status'] for s in m['shapes']), collections.Counter(s.get('backend_used') for s in m['shapes'] if s['stage']=='attention'))"
  grep -v "^ok " /tmp/cap/$n.out | tail -3
done
(cd /tmp/cap && for f in */*.ncu-rep; do xz -9 -T8 "$f"; done; tar cf $OUT/captures.tar */manifest.json */*.ncu.log */*.ncu-rep.xz *.out)
ls -la $OUT
