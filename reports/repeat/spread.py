"""The spread table of repeated captures: per metric, over the dominant kernel of every card,
the median, 90th percentile and maximum of its relative standard deviation (RSD, %) across the
repeats; then every verdict that is unstable, and why. Markdown on stdout.

    python reports/repeat/spread.py CARDS.json [CARDS.json ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.cards.files import load_card_file  # noqa: E402
from ncu_classify.cards.rollup import named_dominant  # noqa: E402
from ncu_classify.core.metrics import CATALOG  # noqa: E402

ORDER = {spec.key: i for i, spec in enumerate(CATALOG)}


def table(path: Path) -> list[str]:
    """The spread table and the unstable verdicts of one cards file."""
    cards = load_card_file(path)
    rsd: dict[str, list[float]] = {}
    basis = set()
    for card in cards.cards:
        top = named_dominant(card)
        if top is None or top.repeats is None:
            continue
        basis.add(top.repeats.basis)
        figures = {"dur_us": top.repeats.dur_us, **top.repeats.metrics}
        for key in top.repeats.scaled:  # the duration's RSD again, by construction
            figures.pop(key, None)
        for key, spread in figures.items():
            if spread is not None and spread.rsd_pct is not None and spread.mean:
                rsd.setdefault(key, []).append(spread.rsd_pct)
    lines = [f"#### {path.name} ({', '.join(sorted(basis))}; dominant kernels)", ""]
    lines += [
        "| metric | kernels | median RSD % | p90 RSD % | max RSD % |",
        "|---|---:|---:|---:|---:|",
    ]
    for key in sorted(rsd, key=lambda k: ORDER.get(k, len(ORDER))):
        values = sorted(rsd[key])
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        lines.append(
            f"| {key} | {len(values)} | {statistics.median(values):.2f} | {p90:.2f} |"
            f" {values[-1]:.2f} |"
        )
    if "durations" in basis:
        lines += ["", "(% of peak over elapsed time, counted once, carries the duration's RSD)"]
    measured = [c for c in cards.cards if c.measurement and c.measurement.stability]
    unstable = [c for c in measured if c.measurement.stability.verdict == "unstable"]  # type: ignore[union-attr]
    lines += ["", f"{len(measured) - len(unstable)} of {len(measured)} verdicts stable;"
              f" unstable:", ""]  # fmt: skip
    for card in unstable:
        why = card.measurement.stability.why  # type: ignore[union-attr]
        lines.append(f"- `{card.group}`: {why}")
    return lines


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print("\n".join(table(Path(name))) + "\n")
