"""Time the per-stage roll-up (`summary.by_stage`, behind `summary`, `report` and the diff's
stage totals) on N one-card stages: what a folder of N loose reports gives (each report is its
own stage). The card is a real one, the first of the committed 480x832 H200 cards, copied N
times under the stage names s0 .. s{N-1}.

    python bench/summary_speed.py [--stages 400,4000] [--repeat 3]

Prints, per N, the best of `--repeat` runs in seconds and per stage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncu_classify.cards.files import load_card_file  # noqa: E402
from ncu_classify.cards.rollup import by_stage  # noqa: E402

CARDS = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"


def timed(stages: int, repeat: int) -> float:
    """Best wall time of `by_stage` over `stages` one-card stages."""
    card = load_card_file(CARDS).cards[0]
    cards = [card.model_copy(update={"stage": f"s{i}"}) for i in range(stages)]
    by_stage(cards[:1])  # pandas imported outside the timing
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        rows = by_stage(cards)
        best = min(best, time.perf_counter() - start)
    assert len(rows) == stages
    return best


def main() -> None:
    """Print the figure for each stage count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="400,4000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for stages in (int(n) for n in args.stages.split(",")):
        seconds = timed(stages, args.repeat)
        print(f"{stages} stages: {seconds:.3f} s ({1000 * seconds / stages:.3f} ms per stage)")


if __name__ == "__main__":
    main()
