#!/bin/bash
# capture --drop-sources on the H200 (issue 21, report size): a real capture of the 11 smoke
# shapes with the rewrite, classified; and NVIDIA's own reader on a committed report and on
# its copy without sources: the raw pages (every metric of every kernel) must be identical.
# Needs PYTHONPATH (pydantic, ruamel, ncu_report, this repo) and ncu on PATH; writes to $OUT.
python3 - <<'PY' > $OUT/drop_sources_capture.txt 2>&1; echo "drop capture rc $?"; cat $OUT/drop_sources_capture.txt
import time
from pathlib import Path
from ncu_classify.capture.plan import CaptureOptions
from ncu_classify.capture.run import capture
from ncu_classify.read.framing import check_report
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import load_rules
out = Path("/tmp/cap_slim")
began = time.time()
m = capture(Path("fixtures/shapes/smoke.yaml"), out, CaptureOptions(drop_sources=True, per_stage=False))
print("capture s", round(time.time() - began, 1), [s.status for s in m.shapes].count("ok"), "of", len(m.shapes), "ok")
for b in m.batches:
    info = check_report(out / b.report)
    print("batch", b.name, "dropped", b.dropped_source_bytes, "kept", info.size, "kernels", info.kernels, "source blocks", len(info.source_blocks))
cards = classify([out], load_rules(), jobs=4)
print("cards", len(cards.cards), [c.primary for c in cards.cards], "errors", cards.input_errors)
PY
xz -dc fixtures/smoke_h200/attention.ncu-rep.xz > /tmp/att.ncu-rep && cp /tmp/att.ncu-rep /tmp/att_slim.ncu-rep
python3 -c "from pathlib import Path; from ncu_classify.capture.slim import drop_sources; print('attention dropped', drop_sources(Path('/tmp/att_slim.ncu-rep')))"
ncu --import /tmp/att.ncu-rep --page raw --csv > /tmp/att.csv 2>&1; echo "import whole rc $?"
ncu --import /tmp/att_slim.ncu-rep --page raw --csv > /tmp/att_slim.csv 2>&1; echo "import slim rc $?"
cmp /tmp/att.csv /tmp/att_slim.csv && echo "ncu raw pages identical: $(wc -l < /tmp/att.csv) lines, $(head -1 /tmp/att.csv | tr ',' '\n' | wc -l) columns"
cp /tmp/att.csv $OUT/attention_raw.csv
ncu --import /tmp/cap_slim/all.ncu-rep --page raw --csv > $OUT/cap_slim_raw.csv 2>&1; echo "import slim capture rc $? $(wc -l < $OUT/cap_slim_raw.csv) lines"
ncu --import /tmp/att_slim.ncu-rep --page source --csv 2>&1 | head -3
