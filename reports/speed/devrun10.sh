#!/bin/bash
# device run 10 (issue 21): the copy without sources in memory (memfd, e63a11c) against the
# same code with the copy on disk (.abB, carried), in turn, 300 smoke reports; then the
# classify bench on those and on the 1,568-kernel report, 7 rounds each
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; date; mount | grep " / "
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
python3 -c "
import sys; sys.path.insert(0, 'bench')
from pathlib import Path
from classify_speed import make_folder, SMOKE
make_folder(Path('/tmp/abs/reports'), 75, sorted(SMOKE.glob('*.ncu-rep.xz')))"
timeout 90 python3 reports/speed/ab_stream.py /tmp/abs/reports .abB:disk .:memory --jobs 1,16 --rounds 7 > $OUT/ab_memfd_smoke300.txt 2>&1; echo "ab rc $?"; cat $OUT/ab_memfd_smoke300.txt
timeout 130 python3 bench/classify_speed.py --copies 75 --rounds 7 --memory-steps 16 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 170 python3 bench/classify_speed.py --report $W --times 4 --rounds 7 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
date
