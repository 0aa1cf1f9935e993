#!/usr/bin/env bash
# N consecutive runs of the README's test command (python3 -m pytest), each under a 15-minute
# guard, on the machine it runs on: number, exit code, wall seconds, pytest's summary line.
# Usage: reports/hardening/suite_runs.sh N LOG   (from the repository root, venv active)
set -u
n=${1:-30}
log=${2:-reports/hardening/suite_runs.txt}
{
  echo "# $n consecutive runs of the README's test command (python3 -m pytest) on $(nproc) cores,"
  echo "# each under a 15-minute guard: number, exit code, wall seconds, summary."
  echo
  echo "# $(git log -1 --format='%h %s' | cut -c1-90), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$log"
clean=0
for i in $(seq 1 "$n"); do
  start=$(date +%s)
  timeout 900 python3 -m pytest -q -p no:cacheprovider > /tmp/suite_run.log 2>&1
  rc=$?
  summary=$(grep -E '^[0-9]+ (passed|failed)|passed|failed' /tmp/suite_run.log | tail -1 | sed 's/=//g; s/^ *//')
  echo "run $i rc=$rc $(( $(date +%s) - start )) s: $summary" >> "$log"
  if [ "$rc" = 0 ]; then clean=$((clean + 1)); else cp /tmp/suite_run.log "${log%.txt}_run$i.log"; fi
done
echo "# $clean of $n clean" >> "$log"
tail -1 "$log"
