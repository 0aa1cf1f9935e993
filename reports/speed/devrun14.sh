#!/bin/bash
# device run 14 (issue 21, capture rows): two ncu processes on one GPU against one
# (probe_two_ncu.py: 61 of the 1,028 scaled Wan shapes, one process, two shards at once, one again)
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc PATH=/usr/local/cuda/bin:/opt/nvidia/nsight-compute/2025.3.1:$PATH
nproc; date; which ncu
timeout 420 python3 reports/speed/probe_two_ncu.py --every 17 --out $OUT > $OUT/two_ncu.txt 2>&1; echo "probe rc $?"; tail -40 $OUT/two_ncu.txt
for d in one two_1 two_2 one_again; do python3 -c "
import json,sys; m=json.load(open('/tmp/two_ncu/$d/manifest.json')); b=m.get('batches',[])
print('$d', [(x.get('name'), x.get('wall_seconds')) for x in b], 'phases', json.dumps(m.get('replay_phases'))[:300])" 2>&1; done
date
