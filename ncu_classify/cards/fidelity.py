"""How faithful a card's replay is to the program's own call: replayed kernel time per call
against the time torch.profiler measured for the same call at record time, and the likely
cause where they differ by more than 10 % (every view computes it this way)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..core.text import counted
from .kernel_names import kernel_cause
from .model import Card

FIDELITY_TOLERANCE = 0.10  # a replay further than this from the program's time is listed
L2_BYTES_UNKNOWN_GPU = 50 * 2**20  # an H100's L2, when the card's GPU does not say


def has_kernels(card: Card) -> bool:
    """A card that measured its shape: captured, with every kernel it launched."""
    return card.status in ("classified", "unresolved") and bool(card.kernels)


class Fidelity(BaseModel):
    """A card's replayed time per call against the program's own time per call."""

    model_config = ConfigDict(extra="forbid")
    group: str
    stage: str
    replayed_us: float
    real_us: float
    ratio: float  # replayed / real
    note: str | None


def fidelity(card: Card) -> Fidelity | None:
    """Replay against the program for a card whose recording timed it (None otherwise), with
    the likely cause where the two differ by more than 10 %."""
    if not card.real_us or card.summed_kernel_us is None or not has_kernels(card):
        return None
    ratio = card.summed_kernel_us / card.real_us
    note = None
    if abs(ratio - 1) > FIDELITY_TOLERANCE:
        note = fidelity_note(card, ratio)
    return Fidelity(
        group=card.group,
        stage=card.stage,
        replayed_us=card.summed_kernel_us,
        real_us=card.real_us,
        ratio=round(ratio, 4),
        note=note,
    )


def fidelity_note(card: Card, ratio: float) -> str:
    """The likely cause of a replay that differs from the program's call: the kernels it
    launched differently (named, where the recording named the program's), else caches or
    clocks (only where both ran the same kernels, or the program's are not named)."""
    notes = []
    kernels = card.real_kernels
    if kernels is not None and abs(kernels - len(card.kernels)) >= 0.5:
        notes.append(
            f"{counted(len(card.kernels), 'kernel')} replayed, {kernels:g} per call in the program"
        )
    cause = kernel_cause(card)
    if cause is not None:
        return "; ".join([*notes, cause])
    l2 = card.gpu.l2_bytes if isinstance(card.gpu.l2_bytes, (int, float)) else L2_BYTES_UNKNOWN_GPU
    size = card.nominal_bytes
    if ratio > 1 and size is not None and size < l2:
        notes.append(
            f"its {size / 2**20:.1f} MiB fit in L2: the program may find them warm,"
            " ncu flushes caches before each replay pass"
        )
    elif ratio > 1:
        notes.append("ncu flushes caches between passes; the program's caches are warm")
    else:
        notes.append("the program ran it slower: contention with overlapping work, or clocks")
    return "; ".join(notes)


def slow_or_fast(cards: list[Card]) -> list[Fidelity]:
    """Cards whose replay differs from the program by more than 10 %, largest share of the
    program's time first."""
    found = [f for card in cards if (f := fidelity(card)) and f.note is not None]
    calls = {card.group: card.calls for card in cards}
    return sorted(found, key=lambda f: -abs(f.replayed_us - f.real_us) * calls.get(f.group, 1))
