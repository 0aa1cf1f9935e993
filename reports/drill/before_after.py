"""Before/after table of the drill-downs (issue 18): per stage, the cards and the kernel time
per inference that rules/roofline.yaml leaves unresolved, then the same once the drill-down
capture is merged, and the classes the unresolved cards settled on. Prints Markdown.

    python reports/drill/before_after.py > reports/drill/before_after.md
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncu_classify.cards.model import UNRESOLVED, CardFile  # noqa: E402
from ncu_classify.cards.rollup import card_class  # noqa: E402
from ncu_classify.verdicts.classify import classify  # noqa: E402
from ncu_classify.verdicts.rules import load_rules  # noqa: E402

RUNS = [
    ("480x832 workload", "fixtures/workload_h200_480x832", "fixtures/drill_h200_480x832"),
    ("704x1280 workload", "fixtures/workload_h200_704x1280", "fixtures/drill_h200_704x1280"),
    ("Wan 2.1 14B recording", "fixtures/record_h200_wan14b", "fixtures/drill_h200_wan14b"),
]
UNSETTLED = {UNRESOLVED, "unresolved_mixed_stalls"}


def per_stage(cards: CardFile) -> dict[str, tuple[float, int, float]]:
    """stage -> (kernel time per inference, unresolved cards, their time), in us."""
    out: dict[str, tuple[float, int, float]] = {}
    for card in cards.cards:
        time = (card.summed_kernel_us or 0.0) * card.calls
        total, count, lost = out.get(card.stage, (0.0, 0, 0.0))
        open_ = card_class(card)[1] in UNSETTLED
        out[card.stage] = (total + time, count + open_, lost + (time if open_ else 0.0))
    return out


def main() -> None:
    """Classify each capture alone and with its drill-down; print the table per stage."""
    rules = load_rules(ROOT / "rules" / "roofline.yaml")
    print(
        "| capture | stage | kernel us per inference | unresolved before: cards, us, % |"
        " after drill-down: cards, us, % | settled classes of the formerly unresolved |"
    )
    print("| --- | --- | ---: | --- | --- | --- |")
    for name, first, drill in RUNS:
        before = classify([ROOT / first], rules, jobs=2)
        after = classify([ROOT / first, ROOT / drill], rules, jobs=2)
        settled: dict[str, Counter[str]] = {}
        for card in after.cards:
            if card.status == "unresolved":
                settled.setdefault(card.stage, Counter())[card_class(card)[1]] += 1
        late = per_stage(after)
        for stage, (total, count, lost) in per_stage(before).items():
            _, count2, lost2 = late[stage]
            moved = ", ".join(f"{k} {v}" for k, v in sorted(settled.get(stage, Counter()).items()))
            print(
                f"| {name} | {stage} | {total:,.1f} | {count}, {lost:,.1f}, {lost / total:.1%} |"
                f" {count2}, {lost2:,.1f}, {lost2 / total:.1%} | {moved or '-'} |"
            )


if __name__ == "__main__":
    main()
