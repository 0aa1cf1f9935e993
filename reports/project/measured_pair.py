"""One program's cards measured on two GPU kinds, and the projection of the first onto the
second, shape by shape (issue 42's comparison on what was measured). Shapes whose kernels
differ between the two captures are set apart (the H200 capture of the compiled Wan decode
replayed its dynamic graphs static, other kernels). For the rest, grouped by the baseline's
class: the time per inference on each side, the measured ratio, the projected one, and the
median and worst projection error per shape. Prints Markdown.

    python reports/project/measured_pair.py BASELINE.json MEASURED.json PROJECTED.json
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def cards(path: str) -> dict[str, dict]:  # type: ignore[type-arg]
    """The cards of a file by group, those with kernels only."""
    data = json.loads(Path(path).read_text())
    return {c["group"]: c for c in data["cards"] if c.get("kernels")}


def per_inference(card: dict) -> float:  # type: ignore[type-arg]
    """A card's kernel time per inference, us (summed kernel time x calls)."""
    return float(card["summed_kernel_us"]) * int(card["calls"])


def kernels(card: dict) -> list[str]:  # type: ignore[type-arg]
    """The card's kernels by function name, in launch order."""
    return [k["function_name"] for k in card["kernels"]]


def main() -> None:
    """The Markdown tables: per stage, per baseline class, and the worst projections."""
    base, measured, projected = (cards(p) for p in sys.argv[1:4])
    shared = [g for g in base if g in measured and g in projected]
    same = [g for g in shared if kernels(base[g]) == kernels(measured[g])]
    apart = [g for g in shared if g not in same]
    print(f"{len(shared)} shapes on both sides; {len(apart)} with other kernels set apart")
    print(f"({sum(per_inference(base[g]) for g in apart) / 1e3:.1f} ms on the baseline).\n")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for group in same:
        groups[(base[group]["stage"], base[group]["primary"])].append(group)
    print("| stage | class on the baseline | shapes | baseline ms | measured ms | measured x |"
          " projected x | projection error, median / worst |")  # fmt: skip
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for (stage, primary), members in sorted(groups.items()):
        b = sum(per_inference(base[g]) for g in members)
        m = sum(per_inference(measured[g]) for g in members)
        p = sum(per_inference(projected[g]) for g in members)
        errors = [per_inference(projected[g]) / per_inference(measured[g]) - 1 for g in members]
        median, worst = statistics.median(errors), max(errors, key=abs)
        print(f"| {stage} | {primary} | {len(members)} | {b / 1e3:.3f} | {m / 1e3:.3f} |"
              f" {m / b:.3f} | {p / b:.3f} | {median:+.1%} / {worst:+.1%} |")  # fmt: skip
    b, m, p = (sum(per_inference(side[g]) for g in same) for side in (base, measured, projected))
    print(f"| all | | {len(same)} | {b / 1e3:.3f} | {m / 1e3:.3f} | {m / b:.3f} | {p / b:.3f} |"
          f" {p / m - 1:+.1%} (of the sum) |\n")  # fmt: skip
    flips = sum(base[g]["primary"] != measured[g]["primary"] for g in same)
    print(f"Classes that differ between the two measurements: {flips} of {len(same)} shapes.\n")
    print("Projected time against measured, the 8 shapes the model gets most wrong:\n")
    print("| shape | baseline class | measured class | baseline us | measured us | projected us |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    gap = {g: abs(per_inference(projected[g]) - per_inference(measured[g])) for g in same}
    ranked = sorted(same, key=lambda g: -gap[g])
    for g in ranked[:8]:
        print(f"| `{g}` | {base[g]['primary']} | {measured[g]['primary']} |"
              f" {base[g]['summed_kernel_us']:.1f} | {measured[g]['summed_kernel_us']:.1f} |"
              f" {projected[g]['summed_kernel_us']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
