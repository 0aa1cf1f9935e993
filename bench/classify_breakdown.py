"""Where classify's time goes, against the bare read: one fresh process per figure.

    python bench/classify_breakdown.py FOLDER [--rounds 3]

Modes: bare (ncu_report reads only), inproc (the tool's reader and rules in one process, no
workers), tool (classify() as shipped, jobs=1), fixed (rules, cards and JSON on reads done
beforehand). Prints the best wall and CPU seconds of each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def run_mode(mode: str, folder: Path) -> dict:
    from classify_speed import bare_read, cpu_seconds

    from ncu_classify.cards.files import write_card_file
    from ncu_classify.read import parallel as reading
    from ncu_classify.verdicts import classify as module
    from ncu_classify.verdicts.judge import kernel_card
    from ncu_classify.verdicts.rules import load_rules

    paths = sorted(folder.glob("*.ncu-rep"))
    cpu, start = cpu_seconds(), time.perf_counter()
    if mode == "bare":
        for path in paths:
            bare_read(path)
    elif mode == "inproc":
        reading._use(partial(kernel_card, rules=load_rules()), None)
        for path in paths:
            reading._read(path)
    elif mode == "tool":
        write_card_file(folder.parent / "c.json", module.classify([folder], load_rules(), jobs=1))
    elif mode == "fixed":
        rules = load_rules()
        reading._use(partial(kernel_card, rules=rules), None)
        done = [reading._read(p) for p in paths]
        module.read_all = lambda paths, jobs, per_kernel, progress=None: done  # type: ignore[assignment]
        cpu, start = cpu_seconds(), time.perf_counter()
        write_card_file(folder.parent / "c.json", module.classify([folder], load_rules(), jobs=1))
    return {"mode": mode, "wall": time.perf_counter() - start, "cpu": cpu_seconds() - cpu}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", default="")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_mode(args.child, args.folder)))
        return
    best: dict[str, dict] = {}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for _ in range(args.rounds):
        for mode in ("bare", "inproc", "tool", "fixed"):
            out = subprocess.run(
                [sys.executable, __file__, str(args.folder), "--child", mode],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            if mode not in best or row["wall"] < best[mode]["wall"]:
                best[mode] = row
    base = best["bare"]["wall"]
    for mode, row in best.items():
        print(
            f"{mode:7} wall {row['wall']:.3f} s ({row['wall'] / base:.3f}x)  cpu {row['cpu']:.3f} s"
        )


if __name__ == "__main__":
    main()
