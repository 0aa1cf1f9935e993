#!/bin/bash
# The H200 device runs of issue 21 (2026-12-02/03), one script: the shared set-up and, per run,
# the probes it ran with their options. What run N wrote is in h200/runN/ (runs 1-2: the
# classify_*.txt files of h200/); README.md says what each showed. On the device host, from
# the repository root, with $OUT set by the runner: bash reports/speed/device_run.sh N
# Needs the carried .whl4/ (site-packages and the ncu_report wheel, xz tarballs) and, for the
# A/B steps, the other version carried as a package folder (.abA, .abB).
# Runs 1-13 read fixtures/record_h200_wan14b as ncu wrote it; since 2026-12-04 it has no source
# blocks (fixtures/README.md), so a rerun reads it without the copy that leaves them out.
set -u
run=${1:?usage: device_run.sh RUN (1-14)}
mkdir -p /tmp/site /tmp/wheel && tar xJf .whl4/site.tar.xz -C /tmp/site &&
  tar xJf .whl4/ncur.tar.xz -C /tmp/wheel
export PYTHONPATH=/tmp/site:/tmp/wheel:$PWD PYTHONUNBUFFERED=1 NCU_CLASSIFY_CACHE=/tmp/ncc
NCU_PATH=/usr/local/cuda/bin:/opt/nvidia/nsight-compute/2025.3.1:$PATH
W=fixtures/record_h200_wan14b/all.ncu-rep.xz  # 392 kernels; --times 4 = 1,568
nproc; python3 --version; date

step() {  # step SECONDS FILE COMMAND...: COMMAND's output into $OUT/FILE, then shown
  local seconds=$1 file=$2
  shift 2
  timeout "$seconds" "$@" > "$OUT/$file" 2>&1
  echo "$file rc $?"
  cat "$OUT/$file"
}
wan() {  # wan N ROUNDS [SUFFIX] [SECONDS]: the bench on the Wan 14B report taken N times
  step "${4:-200}" "classify_times$1${3:-}.txt" python3 bench/classify_speed.py --report "$W" \
    --times "$1" --rounds "$2"
}
smoke() {  # smoke ROUNDS MEMORY_STEPS [SECONDS]: the bench on 300 smoke reports
  step "${3:-150}" classify_smoke300.txt python3 bench/classify_speed.py --copies 75 \
    --rounds "$1" --memory-steps "$2"
}
phases() {  # phases ARGS...: where the time of classify on 1,568 kernels goes
  step 120 phases_times4.txt python3 bench/classify_phases.py "$W" --times 4 "$@"
}
folder() {  # folder DIR COPIES REPORTS...: bench/classify_speed.py's folder of report copies
  python3 -c "
import sys; sys.path.insert(0, 'bench')
from pathlib import Path
from classify_speed import make_folder, SMOKE
reports = [Path(p) for p in sys.argv[3:]] or sorted(SMOKE.glob('*.ncu-rep.xz'))
make_folder(Path(sys.argv[1]), int(sys.argv[2]), reports, 4 if sys.argv[3:] else 1)" "$@"
}

case $run in
  1)  # ncu's cost per kernel (probe_kernel_cost.py); classify against card reads on 16 cores
    PATH=$NCU_PATH step 300 kernel_cost.txt python3 reports/speed/probe_kernel_cost.py \
      --json "$OUT/kernel_cost.json"
    step 200 classify_1568.txt python3 bench/classify_speed.py --report "$W" --times 4 --rounds 3
    step 120 classify_smoke200.txt python3 bench/classify_speed.py --copies 50 --rounds 3 \
      --memory-steps 16 ;;
  2)  # after the trusted models, the rules cache and the id cache
    wan 4 3 "" 240; wan 8 3 "" 240; smoke 3 16 ;;
  3)  # lean copies for every reader, the paused cycle collector; capture --drop-sources
    PATH=$NCU_PATH timeout 100 bash reports/speed/drop_sources_check.sh
    wan 4 3 "" 180; smoke 3 16
    phases --jobs 1,16 --windows-per-job 1,2,4 --rounds 2 ;;
  4)  # the kernel-card cuts; twice at 1,568 kernels for the spread
    lscpu | grep -m1 "Model name"
    wan 4 3 _a 120; wan 4 3 _b 120; wan 8 3 "" 150; smoke 3 16 120
    phases --jobs 1,16 --rounds 3 ;;
  5)  # NVIDIA's library loaded on a thread (read/preload.py), kernel JSON made by the readers
    lscpu | grep -m1 "Model name"
    wan 4 3 _a 120; wan 4 3 _b 120
    NCU_CLASSIFY_NO_PRELOAD=1 wan 4 3 _nopreload 120
    wan 8 3 "" 150; smoke 3 16 120; phases --jobs 1,16 --rounds 3 ;;
  6)  # the readers stream their rows in parts (read/workers.py)
    lscpu | grep -E "Model name|^Thread|^Core|^Socket"
    phases --jobs 1,16 --rounds 3
    wan 4 3 _a 120; wan 4 3 _b 120; wan 4 3 _c 120; wan 8 3 "" 150; smoke 3 16 120 ;;
  7)  # does streaming cost one job anything? 1ff9f8d (.abA) against this commit, in turn
    folder /tmp/abf/reports 1 "$W"
    step 200 ab_stream.txt python3 reports/speed/ab_stream.py /tmp/abf/reports .abA:before \
      .:now --jobs 1,16 --rounds 7
    wan 4 5 "" 150; wan 8 3 "" 150 ;;
  8)  # why one job's time moves between runs: every run's phases, page faults, the host
    (lscpu; free -m; cat /proc/pressure/cpu /proc/pressure/memory /proc/pressure/io; df -h /tmp) \
      > "$OUT/host.txt" 2>&1
    phases --jobs 1,16 --rounds 5 --every
    wan 4 7 "" 260; wan 8 4 "" 180 ;;
  9)  # the issue's --jobs 1 row: 300 smoke reports, 7 rounds; another host
    smoke 7 16,64 240; wan 4 7 "" 240 ;;
  10) # the copy without sources in memory (memfd) against on disk (.abB), in turn
    folder /tmp/abs/reports 75
    step 90 ab_memfd_smoke300.txt python3 reports/speed/ab_stream.py /tmp/abs/reports \
      .abB:disk .:memory --jobs 1,16 --rounds 7
    smoke 7 16 130; wan 4 7 "" 170 ;;
  11) # run 10's code on another host
    smoke 5 4 100; wan 4 4 "" 95 ;;
  12) # the kernel card's own cost, 2423a36 (.abA) against this commit, in turn
    step 60 ab_card_cost.txt python3 reports/speed/ab_card_cost.py "$W" .abA:before .:now \
      --rounds 5 --reps 5
    folder /tmp/abs/reports 75
    step 80 ab_smoke300.txt python3 reports/speed/ab_stream.py /tmp/abs/reports .abA:before \
      .:now --jobs 1 --rounds 9
    smoke 7 4; wan 4 7 ;;
  13) # run 12's code (0f3540c) on another host, every one-job run's phases
    step 100 phases_times4.txt python3 bench/classify_phases.py "$W" --times 4 --jobs 1 \
      --rounds 5 --every
    smoke 7 4; wan 4 7 ;;
  14) # two ncu processes on one GPU against one (61 of the 1,028 scaled Wan shapes)
    PATH=$NCU_PATH step 420 two_ncu.txt python3 reports/speed/probe_two_ncu.py --every 17 \
      --out "$OUT"
    for d in one two_1 two_2 one_again; do
      python3 -c "
import json, sys; m = json.load(open(f'/tmp/two_ncu/{sys.argv[1]}/manifest.json'))
print(sys.argv[1], [(b.get('name'), b.get('wall_seconds')) for b in m.get('batches', [])],
      'phases', json.dumps(m.get('replay_phases'))[:300])" "$d"
    done ;;
  *) echo "device_run.sh: no run $run (1-14)" >&2; exit 2 ;;
esac
date
