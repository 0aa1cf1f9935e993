"""Per-stage verdict counts of the committed workload captures under three readings: the legacy
rules on the old tensor figure (tensor pipe over *active* cycles), the legacy rules on the
corrected one (over elapsed cycles), and rules/roofline.yaml. Writes a Markdown table.

    python reports/roofline/verdict_counts.py > reports/roofline/verdict_counts.md
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.verdicts.classify import classify  # noqa: E402
from ncu_classify.verdicts.rules import load_rules  # noqa: E402


def readings() -> dict[str, Path]:
    """Rules files of the three readings (the old figure: tensor_active_pct in rule 1)."""
    legacy = ROOT / "rules" / "default.yaml"
    old = Path(tempfile.mkdtemp()) / "legacy_active.yaml"
    text = legacy.read_text().replace("{metric: tensor_pct,", "{metric: tensor_active_pct,")
    old.write_text(text.replace("id: legacy-v1", "id: legacy-v1-active-tensor"))
    return {
        "legacy rules, tensor over active cycles (before)": old,
        "legacy rules, tensor over elapsed cycles": legacy,
        "rules/roofline.yaml": ROOT / "rules" / "roofline.yaml",
    }


def main() -> None:
    print("# Verdicts per stage under three readings of the same captures\n")
    print("Made by `python reports/roofline/verdict_counts.py` from the committed captures.\n")
    for resolution in ("480x832", "704x1280"):
        folder = ROOT / "fixtures" / f"workload_h200_{resolution}"
        print(f"## {resolution} (10 heads, roofline counters; `{folder.relative_to(ROOT)}`)\n")
        print("| reading | stage | verdicts (cards) |\n| --- | --- | --- |")
        for name, rules_path in readings().items():
            cards = classify([folder], load_rules(rules_path), jobs=1).cards
            by_stage: dict[str, Counter[str]] = {}
            for card in cards:
                by_stage.setdefault(card.stage, Counter())[card.primary or card.status] += 1
            for stage, counts in by_stage.items():
                text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                print(f"| {name} | {stage} | {text} |")
        print()


if __name__ == "__main__":
    main()
