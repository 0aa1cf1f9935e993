# A model script through the whole tool on the H200 (bench/whole_model.py: plain program,
# record, capture --one-process, classify), then the independent torch.profiler check
# (profile_program.py). Run from the repository root on the GPU host with the wheels it lacks
# in .whl:  bash reports/record/whole_model_h200.sh TAG LIMIT_S SCRIPT [SCRIPT ARGS]
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python PYTHONUNBUFFERED=1
TAG=$1; LIMIT=$2; shift 2
W=/tmp/$TAG; mkdir -p $W
timeout $LIMIT python3 bench/whole_model.py --work $W --stage 'transformer*=dit' \
  --stage 'vae*=vae' --stage '=output' -- python3 "$@"
timeout 150 python3 reports/record/profile_program.py "$@" > $W/profile.json 2> $W/profile.err
cat $W/profile.json; tail -n 3 $W/profile.err
(cd $W && for f in cap/*.ncu-rep; do xz -T16 -6 "$f"; done
 tar cf $OUT/$TAG.tar shapes.yaml cards.json figures.json profile.json *.log cap)
