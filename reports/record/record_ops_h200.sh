set -u
pip install -q --no-index --no-deps --target /tmp/site .whl_gpu/*.whl .whl_rec2/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python PYTHONUNBUFFERED=1
export PATH=/opt/nvidia/nsight-compute/2025.3.1:$PATH
python3 -c "import diffusers, torch; print('diffusers', diffusers.__version__, 'torch', torch.__version__)"
ARGS="--height 480 --width 832 --frames 9 --device cuda --dit-dtype bf16 --text-tokens 512"
for i in 1 2 3; do
s=$(date +%s%N); python3 fixtures/models/record_wan.py $ARGS > /dev/null 2>&1; echo "plain rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
s=$(date +%s%N); python3 -m ncu_classify record -o /tmp/w.yaml --stage 'transformer*=dit' --stage 'vae*=vae' --stage '=output' -- python3 fixtures/models/record_wan.py $ARGS 2>&1 | tail -1; echo "record $(( ($(date +%s%N) - s) / 1000000 )) ms"
done
