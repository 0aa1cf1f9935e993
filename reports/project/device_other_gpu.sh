#!/bin/bash
# Issue 42 part 2, on a GPU host of another kind than the H200 (an H100, ...): the 480x832 and
# 704x1280 workloads and the Wan 2.1 14B recording (254 shapes) captured as on the H200, each
# with --drop-sources, their reports and manifests packed into $OUT/other_gpu.tar.xz whatever
# stops (Wan last: on the H200 it took 195 s). Then, on the CPU: reports/project/
# compare_other_gpu.sh FOLDER GPU. With the wheels in .whl/, from the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/other; mkdir -p $W; START=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $W/gpu.csv; cat $W/gpu.csv
pack() { (cd $W && rm -rf ./*/.work && tar cJf $OUT/other_gpu.tar.xz ./* 2>/dev/null); }
trap pack EXIT
left() { echo $(( 570 - ($(date +%s) - START) )); }
for r in 480x832 704x1280; do
  timeout "$(left)" python3 -m ncu_classify capture --shapes fixtures/shapes/workload_$r.yaml \
    -o $W/w$r --one-process --drop-sources > $W/w$r.log 2>&1
  echo "w$r rc $? at $(( $(date +%s) - START )) s"; tail -1 $W/w$r.log
done
xz -dc reports/record/wan_14b_480x832_h200_shapes.yaml.xz > $W/wan14.yaml
timeout "$(left)" python3 -m ncu_classify capture --shapes $W/wan14.yaml -o $W/wan14 \
  --one-process --drop-sources > $W/wan14.log 2>&1
echo "wan14 rc $? at $(( $(date +%s) - START )) s"; tail -1 $W/wan14.log
