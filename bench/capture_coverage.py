"""Capture by time, measured (issue 41): a recorded shapes file captured whole, at
`--coverage P`, and whole again but stopped by SIGTERM at half the whole capture's time; each
classified. Prints the seconds of each, the target's share of the whole capture's time, and per
stage the share of the program's kernel time the cards cover. Needs a GPU host with ncu.

    python bench/capture_coverage.py --shapes wan.yaml --work /tmp/cov [--coverage 99.5]
        [--scale 4] [--skip-whole SECONDS] [--dry-run]

`--scale N` first writes a scaled recording: the file's stages copied N times under new stage
names (`dit`, `dit_2`, ...), each copy with the recording's own shapes, times (`real_us`, calls)
and per-stage totals, so the scaled file has N times the shapes with the recording's own
distribution of time per shape (the Wan 14B recording x 4: 1,016 shapes). `--skip-whole S`
takes the whole capture's time as given (seconds) instead of measuring it, for the SIGTERM
run; `--no-half` skips that run; `--budget S` stops the target's capture after S seconds (a
device command has 10 minutes) and says how far it got (shapes by status, kernels captured).
`--dry-run` writes the scaled file and prints the plans (shapes, below target).
`--light-after L [L ...]` adds, after the target's capture, one capture at the same target per
L with `--light-after L` (the tail with the light metric list), each with its share of the whole
and how many of its light cards' verdicts stayed settled.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import time
from copy import deepcopy
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

CLI = [sys.executable, "-m", "ncu_classify"]


def scaled(shapes: Path, copies: int, out: Path) -> Path:
    """The recording with its stages copied `copies` times under new names (see above)."""
    yaml = YAML()
    yaml.width = 4096
    data = yaml.load(shapes.read_text())
    stages = data["stages"]
    totals = data["recorded"]["totals"]
    original = list(stages)
    for copy in range(2, copies + 1):
        for stage in original:
            stages[f"{stage}_{copy}"] = deepcopy(stages[stage])
            if stage in totals["stages"]:
                totals["stages"][f"{stage}_{copy}"] = deepcopy(totals["stages"][stage])
    data.pop("chains", None)
    with out.open("w") as handle:
        yaml.dump(data, handle)
    return out


def timed(argv: list[str], log: Path, stop_after: float | None = None) -> tuple[float, int]:
    """Seconds and exit code of a command (its output to `log`); SIGTERM after `stop_after`."""
    start = time.perf_counter()
    with log.open("w") as handle:
        proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)
        try:
            code = proc.wait(timeout=stop_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait()
    return time.perf_counter() - start, code


def coverage(raw: Path, work: Path, name: str) -> dict[str, float | None]:
    """The capture folder classified; per stage, the percent of its kernel time covered."""
    cards = work / f"{name}.json"
    subprocess.run([*CLI, "classify", str(raw), "-o", str(cards)], capture_output=True)
    if not cards.exists():
        return {}
    found = json.loads(cards.read_text()).get("coverage", [])
    return {stage["stage"]: stage["coverage_pct"] for stage in found}


def light_verdicts(work: Path, name: str) -> str:
    """Of a classified capture's cards captured light, how many settled and how many are
    unresolved (the light list lacks sm_pct and l2_pct)."""
    try:
        cards = json.loads((work / f"{name}.json").read_text())["cards"]
    except (OSError, ValueError, KeyError):
        return "no cards"
    light = [c for c in cards if c.get("captured_light")]
    unresolved = sum(c.get("status") == "unresolved" for c in light)
    passed = sum(_passed_over(c) for c in light if c.get("status") != "unresolved")
    return (
        f"{len(light)} light cards, {len(light) - unresolved} with a class ({passed} of them past"
        f" a rule the light list could not check), {unresolved} unresolved"
    )


def _passed_over(card: dict[str, Any]) -> bool:
    """Whether a card's dominant kernel's verdict passed over an undecided rule."""
    named = [k for k in card.get("kernels", []) if k["kernel"] == card.get("dominant_kernel")]
    top = max(named, key=lambda k: k.get("metrics", {}).get("dur_us") or 0.0, default={})
    return bool((top.get("margin") or {}).get("rival_unchecked"))


def progress(raw: Path) -> str:
    """How far a capture got: its shapes by status (`ok`, `pending`, ...), from its manifest,
    and the kernels of those captured (what ncu's time goes by)."""
    try:
        manifest = json.loads((raw / "manifest.json").read_text())
    except (OSError, ValueError):
        return "no manifest"
    statuses: dict[str, int] = {}
    for shape in manifest.get("shapes", []):
        statuses[shape.get("status", "?")] = statuses.get(shape.get("status", "?"), 0) + 1
    kernels = sum(s.get("kernels") or 0 for s in manifest.get("shapes", []))
    told = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    return f"shapes {told}, {kernels} kernels captured"


def _target(args: argparse.Namespace, base: list[str], whole_s: float) -> None:
    """The capture at the coverage target, timed (SIGTERM'd after --budget, then resumed)."""
    target = [*base, "-o", str(args.work / "target"), "--coverage", str(args.coverage)]
    target_s, code = timed(target, args.work / "target.log", stop_after=args.budget)
    share = f" ({100 * target_s / whole_s:.1f} % of the whole)" if whole_s > 1 else ""
    print(
        f"--coverage {args.coverage}: {target_s:.1f} s{share}, exit {code},"
        f" {progress(args.work / 'target')}, coverage"
        f" {coverage(args.work / 'target', args.work, 'target')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--coverage", type=float, default=99.5)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--skip-whole", type=float, default=None)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--no-half", action="store_true", help="skip the SIGTERM run")
    parser.add_argument("--light-after", type=float, nargs="*", default=[])
    parser.add_argument(
        "--skip-target", action="store_true", help="no capture at the target without a light tier"
    )
    parser.add_argument(
        "--budget", type=float, default=None,
        help="stop the target's capture by SIGTERM after this many seconds (it resumes with"
        " capture --resume): a device command has 10 minutes",
    )  # fmt: skip
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    shapes = args.shapes
    if args.scale > 1:
        shapes = scaled(shapes, args.scale, args.work / f"scaled_x{args.scale}.yaml")
    if args.dry_run:
        target = ["--coverage", str(args.coverage)]
        lights = [[*target, "--light-after", str(light)] for light in args.light_after]
        for extra in ([], target, *lights):
            argv = [*CLI, "capture", "--shapes", str(shapes), "-o", str(args.work / "plan")]
            done = subprocess.run([*argv, "--dry-run", *extra], capture_output=True, text=True)
            told = [ln for ln in done.stdout.splitlines() if re.match(r"# (\d|--)", ln)]
            print(" ".join(extra) or "whole:", *told)
        return
    base = [*CLI, "capture", "--shapes", str(shapes), "--one-process"]
    whole_s = args.skip_whole
    if whole_s is None:
        whole_s, _ = timed([*base, "-o", str(args.work / "whole")], args.work / "whole.log")
        print(
            f"whole: {whole_s:.1f} s, coverage {coverage(args.work / 'whole', args.work, 'whole')}"
        )
    if not args.skip_target:
        _target(args, base, whole_s)
    for light in args.light_after:
        name = f"light{light:g}"
        argv = [*base, "-o", str(args.work / name), "--coverage", str(args.coverage)]
        light_s, code = timed([*argv, "--light-after", str(light)], args.work / f"{name}.log")
        share = f" ({100 * light_s / whole_s:.1f} % of the whole)" if whole_s > 1 else ""
        print(
            f"--coverage {args.coverage} --light-after {light:g}: {light_s:.1f} s{share}, exit"
            f" {code}, {progress(args.work / name)}, coverage"
            f" {coverage(args.work / name, args.work, name)}, {light_verdicts(args.work, name)}"
        )
    if args.no_half:
        return
    half = [*base, "-o", str(args.work / "half")]
    half_s, code = timed(half, args.work / "half.log", stop_after=whole_s / 2)
    print(
        f"SIGTERM at {whole_s / 2:.1f} s (exit {code}, {half_s:.1f} s): coverage"
        f" {coverage(args.work / 'half', args.work, 'half')}"
    )


if __name__ == "__main__":
    main()
