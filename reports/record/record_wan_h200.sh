# Record the Wan 2.1 14B DiT (one step, bf16) and the Wan VAE decode (fp32) at 480x832, 9
# frames (3 latent frames: the 4,680-token chunk of the legacy workload), on the H200, then
# capture the recorded shapes with their real inputs; then the GPU tests. Run from the
# repository root on the GPU host with the wheels it lacks in .whl (pydantic, ruamel.yaml,
# ncu-report) and .whl_rec2 (diffusers, importlib_metadata).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .whl_rec2/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "import diffusers, torch; print('diffusers', diffusers.__version__, 'torch', torch.__version__)"
mkdir -p /tmp/rec
start=$(date +%s)
python3 -m ncu_classify record -o /tmp/rec/wan_480x832.yaml \
  --stage 'transformer*=dit' --stage 'vae*=vae' --stage '=output' \
  --save-inputs /tmp/rec/inputs --inputs-budget-mb 20000 \
  -- python3 fixtures/models/record_wan.py --height 480 --width 832 --frames 9 \
     --dit wan2.1_t2v_14b_transformer.json --device cuda --dit-dtype bf16 2>&1 | tail -3
echo "record rc=${PIPESTATUS[0]} $(( $(date +%s) - start )) s; inputs $(du -sh /tmp/rec/inputs | cut -f1)"
start=$(date +%s)
python3 -m ncu_classify capture --shapes /tmp/rec/wan_480x832.yaml -o /tmp/rec/cap --one-process > /tmp/rec/capture.log 2>&1
echo "capture rc=$? $(( $(date +%s) - start )) s"; tail -3 /tmp/rec/capture.log
grep -h "passes" /tmp/rec/cap/*.ncu.log | sed 's/.*- //' | sort | uniq -c
python3 -c "
import json,collections; m=json.load(open('/tmp/rec/cap/manifest.json')); print(collections.Counter((s['status'], s['input_source']) for s in m['shapes'])); print([ (s['group'], s['error']) for s in m['shapes'] if s['status']!='ok'])"
(cd /tmp/rec && for f in cap/*.ncu-rep; do xz -9 -T8 "$f"; done; cp capture.log cap/; tar cf $OUT/record.tar wan_480x832.yaml cap)
ls -la $OUT
python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu.py 2>&1 | tail -5
