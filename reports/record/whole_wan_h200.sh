# The Wan 2.1 DiT step + VAE decode at 480x832 through the whole tool on the H200
# (bench/whole_model.py: plain program, record, capture --one-process, classify), then the
# independent torch.profiler check (profile_wan.py). Run from the repository root on the GPU
# host with the wheels it lacks in .whl:  bash reports/record/whole_wan_h200.sh DIT_CONFIG TAG
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python PYTHONUNBUFFERED=1
DIT=${1:-wan2.1_t2v_1.3b_transformer.json}; TAG=${2:-wan13}; LIMIT=${3:-470}
W=/tmp/$TAG; mkdir -p $W
ARGS="--height 480 --width 832 --frames 9 --device cuda --dit-dtype bf16 --dit $DIT"
timeout $LIMIT python3 bench/whole_model.py --work $W --stage 'transformer*=dit' \
  --stage 'vae*=vae' --stage '=output' -- python3 fixtures/models/record_wan.py $ARGS
timeout 120 python3 reports/record/profile_wan.py --height 480 --width 832 --frames 9 \
  --dit $DIT > $W/profile.json 2> $W/profile.err; cat $W/profile.json; tail -3 $W/profile.err
cd $W && tail -3 record.log capture.log classify.log
for f in cap/*.ncu-rep; do xz -T16 -6 "$f"; done
tar cf $OUT/$TAG.tar shapes.yaml cards.json figures.json profile.json *.log cap
ls -la $OUT
