#!/bin/bash
# device run 12 (issue 21): the kernel card's own cost, 2423a36 (.abA, carried) against this
# commit (margins scored once per leaf, trusted() taking a call's own dict, roofline inputs
# without a merged dict, the readers' JSON leaving out unset fields by name), in turn; then the
# classify bench on 300 smoke reports and on the 1,568-kernel report, 7 rounds each
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; date
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
timeout 60 python3 reports/speed/ab_card_cost.py $W .abA:before .:now --rounds 5 --reps 5 > $OUT/ab_card_cost.txt 2>&1; echo "card cost rc $?"; cat $OUT/ab_card_cost.txt
python3 -c "
import sys; sys.path.insert(0, 'bench')
from pathlib import Path
from classify_speed import make_folder, SMOKE
make_folder(Path('/tmp/abs/reports'), 75, sorted(SMOKE.glob('*.ncu-rep.xz')))"
timeout 80 python3 reports/speed/ab_stream.py /tmp/abs/reports .abA:before .:now --jobs 1 --rounds 9 > $OUT/ab_smoke300.txt 2>&1; echo "ab rc $?"; cat $OUT/ab_smoke300.txt
timeout 150 python3 bench/classify_speed.py --copies 75 --rounds 7 --memory-steps 4 > $OUT/classify_smoke300.txt 2>&1; echo "smoke rc $?"; cat $OUT/classify_smoke300.txt
timeout 200 python3 bench/classify_speed.py --report $W --times 4 --rounds 7 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
date
