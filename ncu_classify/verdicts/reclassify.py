"""reclassify: re-apply a rules file to a CardFile, ours or a converted legacy one.

Pure: returns a new CardFile whose kernels and cards are judged again by `cards.judge`, the same
function classify uses, so that reclassifying our own cards under the same rules changes nothing
but `reclassified_at`. Every other field, and the order of cards and kernels, is kept; failed and
incomplete cards stay so. Legacy defects are handled on loading, by `legacy.from_legacy`.
"""

from __future__ import annotations

from .._version import __version__
from ..cards.model import SCHEMA_VERSION, CardFile, card_class, count_classes, judge
from ..core.clock import utc_now
from .rules import LoadedRules


def reclassify(cards: CardFile, rules: LoadedRules, *, at: str | None = None) -> CardFile:
    """`cards` judged again under `rules`, stamped with the rules' identity and `at` (now)."""
    judged = [judge(card, rules) for card in cards.cards]
    summary, by_stage = count_classes(map(card_class, judged))
    return cards.model_copy(
        update={
            "schema_version": SCHEMA_VERSION,
            "reclassified_at": at or utc_now(),
            "tool_version": __version__,
            "rules": rules.rules.summary_text(),
            "rules_id": rules.rules.id,
            "rules_file": rules.path,
            "rules_sha256": rules.sha256,
            "cards": judged,
            "summary": summary,
            "by_stage": by_stage,
        }
    )
