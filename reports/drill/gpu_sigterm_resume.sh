# Run on the H200 (device tool, 2026-12-02) from the repository root with the wheels in .whl3/:
# the drill-down GPU tests, then SIGTERM 16 s into a real drill-down capture, --resume, merge.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl
export PYTHONPATH=/tmp/site:$PWD:/opt/nvidia/nsight-compute/2025.3.1/extras/python PYTHONUNBUFFERED=1
echo "== gpu tests"; timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu.py -k "drill or capture_then" 2>&1 | tail -3
echo "== SIGTERM mid drill-down"
python3 -m ncu_classify capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/dsig --drill-down reports/drill/cards_480x832_roofline.json --one-process > /tmp/dsig.out 2>&1 &
pid=$!; sleep 16; kill -TERM $pid; wait $pid; echo "capture exit $?"; tail -4 /tmp/dsig.out
python3 - <<'PY'
import json; m=json.load(open("/tmp/dsig/manifest.json"))
from collections import Counter
print(Counter(s["status"] for s in m["shapes"]), [b["ended_by"] for b in m["batches"]], len(m["drill_down"]["selected"]))
PY
ps aux | grep -cE "[n]cu_classify(\.capture)?\.replay"
echo "== resume"
python3 -m ncu_classify capture --shapes fixtures/shapes/workload_480x832.yaml -o /tmp/dsig --drill-down reports/drill/cards_480x832_roofline.json --one-process --resume 2>&1 | tail -3; echo "resume exit $?"
python3 -m ncu_classify classify fixtures/workload_h200_480x832 /tmp/dsig --rules rules/roofline.yaml -o /tmp/m.json 2>&1 | grep -i "warn\|error\|wrote"
python3 - <<'PY'
import json; d=json.load(open("/tmp/m.json"))
print("settled", sum(1 for c in d["cards"] if c.get("settled")), "unresolved w/o settled", sum(1 for c in d["cards"] if c["status"]=="unresolved" and not c.get("settled")))
PY
