"""A whole model through the tool, timed: the plain program, `record` of it (every device op,
with the program's kernel time), `capture --one-process` of every recorded shape and
`classify`. Prints record's wall time against the plain program's, capture's seconds (in all
and per shape), and per stage the program's kernel time and the share the cards cover. Needs a
GPU host with ncu.

    python bench/whole_model.py --work /tmp/wan --stage 'transformer*=dit' --stage 'vae*=vae' \\
        --stage '=output' -- python fixtures/models/record_wan.py --device cuda --dit-dtype bf16
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-m", "ncu_classify"]


def timed(argv: list[str], log: Path) -> tuple[float, int]:
    """Seconds and exit code of a command, its output to `log`."""
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    return time.perf_counter() - start, code


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--stage", action="append", default=[])
    parser.add_argument("--plain-runs", type=int, default=1)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    figures: dict[str, object] = {"program": program}
    plain = [timed(program, work / f"plain{i}.log")[0] for i in range(args.plain_runs)]
    stages = [f"--stage={s}" for s in args.stage]
    shapes = work / "shapes.yaml"
    record_s, code = timed([*CLI, "record", "-o", str(shapes), *stages, "--", *program],
                           work / "record.log")  # fmt: skip
    figures |= {"plain_s": plain, "record_s": record_s, "record_exit": code}
    figures["record_over_plain"] = round(record_s / min(plain), 3)
    capture_s, code = timed(
        [*CLI, "capture", "--shapes", str(shapes), "-o", str(work / "cap"), "--one-process"],
        work / "capture.log",
    )
    if not (work / "cap" / "manifest.json").exists():
        sys.exit(f"capture wrote no manifest ({code}): see {work / 'capture.log'}")
    manifest = json.loads((work / "cap" / "manifest.json").read_text())
    statuses: dict[str, int] = {}
    for shape in manifest["shapes"]:
        statuses[shape["status"]] = statuses.get(shape["status"], 0) + 1
    count = len(manifest["shapes"])
    figures |= {"capture_s": round(capture_s, 1), "capture_exit": code, "shapes": count}
    figures |= {"seconds_per_shape": round(capture_s / max(count, 1), 3), "statuses": statuses}
    cards = work / "cards.json"
    classify_s, code = timed([*CLI, "classify", str(work / "cap"), "-o", str(cards)],
                             work / "classify.log")  # fmt: skip
    figures |= {"classify_s": round(classify_s, 1), "classify_exit": code}
    coverage = json.loads(cards.read_text()).get("coverage", []) if cards.exists() else []
    figures["coverage"] = [
        {k: c[k] for k in ("stage", "basis", "coverage_pct", "real_us", "replayed_us")}
        for c in coverage
    ]
    (work / "figures.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
