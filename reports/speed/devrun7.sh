#!/bin/bash
# device run 7 (issue 21): run 6's --jobs 1 ratios (1.19-1.54) were far above run 5's
# (1.02-1.17): does streaming cost one job anything? The commit before streaming (1ff9f8d,
# carried as .abA) against this one, in turn, fresh processes, 7 rounds, at 1,568 kernels;
# then the classify bench again at 1,568 kernels with 5 rounds, and at 3,136
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site && tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
nproc; python3 --version; date
W=fixtures/record_h200_wan14b/all.ncu-rep.xz
python3 -c "
import sys; sys.path.insert(0, 'bench')
from pathlib import Path
from classify_speed import make_folder
make_folder(Path('/tmp/abf/reports'), 1, [Path('$W')], 4)"
ls -la /tmp/abf/reports
timeout 200 python3 reports/speed/ab_stream.py /tmp/abf/reports .abA:before .:now --jobs 1,16 --rounds 7 > $OUT/ab_stream.txt 2>&1; echo "ab rc $?"; cat $OUT/ab_stream.txt
timeout 150 python3 bench/classify_speed.py --report $W --times 4 --rounds 5 > $OUT/classify_times4.txt 2>&1; echo "times 4 rc $?"; cat $OUT/classify_times4.txt
timeout 150 python3 bench/classify_speed.py --report $W --times 8 --rounds 3 > $OUT/classify_times8.txt 2>&1; echo "times 8 rc $?"; cat $OUT/classify_times8.txt
date
