"""The verdicts as values: what judging decides about one kernel (`KernelVerdict`) and about a
card (`CardVerdict`). `verdicts.judge` makes them; a card holds their fields flat, under the
published names, so each value says once which fields it sets (`fields`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .figures import Margin


@dataclass(frozen=True)
class KernelVerdict:
    """A kernel's class under the rules: the rule's name and text, the evidence it was judged
    on, the metrics a rule needed but the kernel lacked, and the margin to the threshold. A
    kernel with no evidence at all has no class (`classification` None), not the fallback."""

    classification: str | None
    rule: str | None
    evidence: dict[str, float | None]
    unchecked_metrics: list[str]
    margin: Margin | None

    def fields(self) -> dict[str, object]:
        """The kernel card's fields this verdict sets, by their published names."""
        return {
            "classification": self.classification,
            "rule": self.rule,
            "evidence": self.evidence,
            "unchecked_metrics": self.unchecked_metrics,
            "margin": self.margin,
        }


@dataclass(frozen=True)
class CardVerdict:
    """A card's verdict: its dominant kernel, the primary class (that kernel's) with the
    rule's texts, and the status. A failed or incomplete card has no primary class."""

    status: str
    dominant_kernel: str | None = None
    primary: str | None = None
    primary_rule: str | None = None
    alternative_explanation: str | None = None
    counter_experiment: str | None = None
    # the fields the card keeps as they were (an incomplete card's named dominant kernel)
    kept: tuple[str, ...] = field(default=())

    def fields(self) -> dict[str, object]:
        """The card's fields this verdict sets, by their published names, in card order."""
        named = {
            "dominant_kernel": self.dominant_kernel,
            "primary": self.primary,
            "primary_rule": self.primary_rule,
            "alternative_explanation": self.alternative_explanation,
            "counter_experiment": self.counter_experiment,
            "status": self.status,
        }
        return {k: v for k, v in named.items() if k not in self.kept}
