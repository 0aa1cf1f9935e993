"""A drill-down capture folded into the cards it drills: classify given the first capture and
the drill-down folder side by side gives each card of the first its kernels' `drill_down`
sections and a settled verdict, while keeping the first capture's metrics and verdict.

Kernels pair up by name and order (the k-th launch of a function in the card with the k-th in the
drill-down), since the same shape replays the same kernels; a drill-down that launched other
kernels (cuDNN chose another algorithm) or ran another backend is another experiment: not
merged, with a warning. A drilled shape that no other input holds stays a card of
its own, and one whose first card has no kernels (its report lost, its replay failed) takes the
drill-down's card in its place, with a note (its report has every card metric too). Either
capture may come without its manifest (`unmanifested`): a drill-down folder is then known by its
cards, and a backend that no manifest records leaves the pairing to the kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..capture.manifest import Manifest
from ..cards.model import Card, KernelCard
from ..core.paths import short_names, shown_under
from ..core.text import counted
from .inputs import ReportSet
from .judge import judge
from .rules import LoadedRules
from .unmanifested import unmanifested_drill_down

SetCards = tuple[ReportSet, list[Card]]


def experiment_label(manifest: Manifest | None, folder: str) -> str:
    """How a drill-down capture is named on the cards it settles (its folder as outputs name
    it, `core.paths.shown_under`)."""
    when = manifest.created_at if manifest else "without its manifest.json"
    return f"drill-down capture {folder} ({when})"


def _drill_folder(report_set: ReportSet, cards: list[Card]) -> Path | None:
    """The folder of a drill-down capture (with its manifest, or recognized without it)."""
    if report_set.manifest is not None and report_set.manifest_path is not None:
        return report_set.manifest_path.parent if report_set.manifest.drill_down else None
    return unmanifested_drill_down(report_set, cards)


def _relabel(card: Card, label: str, created_at: str | None) -> Card:
    """The card's drill-down sections named after the capture that made them."""
    kernels = []
    for kernel in card.kernels:
        drill = kernel.drill_down
        if drill is not None:
            source = drill.source.model_copy(update={"experiment": label, "created_at": created_at})
            kernel = kernel.model_copy(
                update={"drill_down": drill.model_copy(update={"source": source})}
            )
        kernels.append(kernel)
    update: dict[str, object] = {"kernels": kernels}
    if card.settled is not None:
        update["settled"] = card.settled.model_copy(update={"settled_by": label})
    return card.model_copy(update=update)


def _keyed(kernels: Sequence[KernelCard]) -> dict[tuple[str, int], KernelCard]:
    """Kernels by (function name, its launch count so far)."""
    seen: dict[str, int] = {}
    out = {}
    for kernel in kernels:
        name = kernel.function_name or kernel.kernel
        seen[name] = seen.get(name, 0) + 1
        out[(name, seen[name])] = kernel
    return out


def _attach(
    card: Card,
    drilled: Card,
    rules: LoadedRules,
    warnings: list[str],
    backend_known: bool = True,
) -> Card:
    """`card` with the drill-down sections of `drilled`'s matching kernels, judged again; a
    drill-down that replayed another backend (FA3 missing, SDPA's fallback) is not merged.
    `backend_known`: False where the card or the drill-down was read without its manifest, so
    that a backend is unknown (the kernels alone then say whether it replayed the same)."""
    used, redone = (c.shape_parameters.get("backend_used") for c in (card, drilled))
    if used != redone and backend_known:
        warnings.append(
            f"{card.group}: the drill-down replayed backend {redone}, the card {used}: not merged"
        )
        return card
    if card.status not in ("classified", "unresolved"):  # the drill-down holds every metric
        why = card.error or card.status
        note = (
            f"the first capture has no kernels of this shape ({why}): the card is the drill-down's"
        )
        warnings.append(f"{card.group}: {note}")
        return drilled.model_copy(update={"notes": [*drilled.notes, note]})
    mine, found = _keyed(card.kernels), _keyed(drilled.kernels)
    if mine.keys() != found.keys():
        only = sorted(set(mine) ^ set(found))[0]
        warnings.append(
            f"{card.group}: the drill-down launched other kernels (first difference: {only[0]},"
            f" launch {only[1]}): not merged"
        )
        return card
    kernels = [
        k.model_copy(update={"drill_down": found[key].drill_down}) for key, k in mine.items()
    ]
    return judge(card.model_copy(update={"kernels": kernels}), rules, kernels_classified=True)


def merge_drill_downs(
    per_set: list[SetCards],
    rules: LoadedRules,
    warnings: list[str],
    named: dict[Path, str] | None = None,
) -> list[SetCards]:
    """The sources with every drill-down capture's cards folded into the other sources' cards
    of the same group (its own cards only where no other report set holds the group); `named`:
    the inputs as outputs name them."""
    folders = [_drill_folder(s, cards) for s, cards in per_set]
    drills = [(s, c, f) for (s, c), f in zip(per_set, folders, strict=True) if f is not None]
    if not drills:
        return per_set
    firsts = [sc for sc, folder in zip(per_set, folders, strict=True) if folder is None]
    drilled: dict[str, Card] = {}
    unknown: set[str] = set()  # groups drilled by a drill-down read without its manifest
    left: list[SetCards] = []
    for report_set, cards, folder in drills:
        # (a capture read in part: its folder is no input, named as from any working folder)
        shown = short_names([folder])[0] if report_set.part else shown_under(folder, named or {})
        label = experiment_label(report_set.manifest, shown)
        created_at = report_set.manifest.created_at if report_set.manifest else None
        relabelled = [_relabel(c, label, created_at) for c in cards]
        claimed = {c.group for _, held in firsts for c in held}
        twice = [card.group for card in relabelled if card.group in drilled]
        if twice:
            warnings.append(
                f"{label}: {counted(len(twice), 'shape')} drilled down already by an earlier"
                f" input (first: {twice[0]}); the earlier drill-down is merged"
            )
        for card in relabelled:
            if card.group in twice:
                continue
            if card.group in claimed and card.status in ("classified", "unresolved"):
                drilled[card.group] = card
                if report_set.manifest is None:
                    unknown.add(card.group)
            elif card.group in claimed:
                why = card.error or card.status
                warnings.append(f"{card.group}: its drill-down in {label} holds no kernels: {why}")
        alone = [c for c in relabelled if c.group not in claimed]
        if alone and firsts:
            warnings.append(
                f"{label}: {len(alone)} drilled shapes match no card of the other inputs (first:"
                f" {alone[0].group}); kept as cards of their own"
            )
        left.append((report_set, alone))

    def known(report_set: ReportSet, card: Card) -> bool:
        """Whether both backends of the card and its drill-down are known (both manifests)."""
        return report_set.manifest is not None and card.group not in unknown

    merged = [
        (
            s,
            [
                _attach(c, drilled[c.group], rules, warnings, known(s, c))
                if c.group in drilled
                else c
                for c in cards
            ],
        )
        for s, cards in firsts
    ]
    return merged + [(s, cards) for s, cards in left if cards]
