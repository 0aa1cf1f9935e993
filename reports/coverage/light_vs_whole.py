"""The verdicts of a capture's light cards (capture --light-after) against the same shapes'
verdicts in a whole capture of the same recording on the same GPU: how many kept their class,
how many became unresolved, how many changed class and whether the card said it passed over a
rule it could not check (margin.rival_unchecked), and the replay passes of light and full
kernels. Usage: light_vs_whole.py WHOLE.json LIGHT.json (bench/capture_coverage.py cards).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path
from typing import Any


def _cards(path: Path) -> dict[str, dict[str, Any]]:
    return {card["group"]: card for card in json.loads(path.read_text())["cards"]}


def _top(card: dict[str, Any]) -> dict[str, Any]:
    named = [k for k in card.get("kernels", []) if k["kernel"] == card.get("dominant_kernel")]
    return max(named, key=lambda k: k.get("metrics", {}).get("dur_us") or 0.0, default={})


def _passes(cards: list[dict[str, Any]]) -> collections.Counter[int | None]:
    return collections.Counter(k.get("replay_passes") for c in cards for k in c.get("kernels", []))


def main() -> None:
    """Print the comparison table and the replay passes."""
    whole, light = (_cards(Path(p)) for p in sys.argv[1:3])
    pairs: collections.Counter[tuple[str, str, bool]] = collections.Counter()
    us: collections.Counter[tuple[str, str, bool]] = collections.Counter()
    lit = [c for c in light.values() if c.get("captured_light")]
    for card in lit:
        full = whole.get(card["group"])
        if full is None:
            continue
        key = (
            str(full.get("primary")),
            str(card.get("primary")),
            bool((_top(card).get("margin") or {}).get("rival_unchecked")),
        )
        pairs[key] += 1
        us[key] += (full.get("summed_kernel_us") or 0.0) * full.get("calls", 1)
    print(f"{len(lit)} light cards; whole class -> light class (past an unchecked rule): cards, us")
    for key, count in sorted(pairs.items(), key=lambda item: -us[item[0]]):
        print(
            f"  {key[0]} -> {key[1]}{' (past unchecked)' if key[2] else ''}: {count}, "
            f"{us[key]:,.1f} us per inference"
        )
    print(f"replay passes, light kernels: {dict(_passes(lit))}")
    full_cards = [c for c in light.values() if not c.get("captured_light")]
    print(f"replay passes, full kernels of the same capture: {dict(_passes(full_cards))}")


if __name__ == "__main__":
    main()
