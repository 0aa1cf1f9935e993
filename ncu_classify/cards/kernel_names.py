"""The kernels a recorded program launched for a shape against those its replay launched, by
name: the cause fidelity gives where they differ (a copy kernel the program ran for a strided
input, a kernel the replay's backend chose instead). torch.profiler and ncu write one kernel's
name in different forms (`elementwise_kernel<128, 4, ...>(int, ...)` against
`elementwise_kernel<(int)128, (int)4, ...>(int, ...)`, `(anonymous namespace)` against
`<unnamed>`, the profiler's cut at 160 characters by record): both are compared by their base
name, the function's own name without its namespaces, template arguments and parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.kernel_names import base_name, plain_name
from .model import Card

COPY = re.compile(r"direct_copy_kernel|copy_kernel|CopyKernel")  # a copy, not a cat or a set
NAMED = 3  # kernels named per kind of difference; the rest are counted
CUT_AT = 160  # record cuts a name to this length (record.totals.NAME_CHARS; a test keeps both)
MISMATCH = 0.5  # launches per call apart for a kernel to count as missing or extra


def _cut_in_base(name: str) -> bool:
    """A program's name record cut before its template arguments or parameters began."""
    text = plain_name(name)
    return len(name) >= CUT_AT and "<" not in text and "(" not in text


def is_copy(name: str) -> bool:
    """A copy kernel (ATen's `direct_copy_kernel_cuda` inside an elementwise kernel, a
    copy kernel of its own), by its full name."""
    return COPY.search(name) is not None


@dataclass(frozen=True)
class Launches:
    """One base name's kernels per call: in the program (None: launched, not counted) and in
    the replay, with one full name of them."""

    base: str
    full: str
    program: float | None
    replayed: int

    def label(self) -> str:
        """How a cause names it: `direct_copy_kernel` for ATen's copy, else its base name."""
        return "direct_copy_kernel" if "direct_copy_kernel" in self.full else self.base


def program_kernels(card: Card) -> dict[str, float | None] | None:
    """The recorded program's kernels for the card's shape, name -> launches per call: the
    recording's `real_kernel_names`, else a compiled shape's `kernels` (names only, as record
    wrote them before it counted them); None when the recording named none."""
    if card.real_kernel_names is not None:
        return dict(card.real_kernel_names)
    names = card.shape_parameters.get("kernels") if card.op == "compiled" else None
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return dict.fromkeys(names)
    return None


def launches(card: Card) -> list[Launches] | None:
    """Per base name, the program's launches per call beside the replay's (one call: the
    card's kernels), the program's order first; None when the program's names are unknown."""
    program = program_kernels(card)
    if program is None:
        return None
    found: dict[str, Launches] = {}
    for name, count in program.items():
        base, seen = base_name(name), found.get(base_name(name))
        if seen is None:
            found[base] = Launches(base, name, count, 0)
        else:
            total = None if seen.program is None or count is None else seen.program + count
            found[base] = Launches(base, seen.full, total, 0)
    cut = [key for key, item in found.items() if _cut_in_base(item.full)]
    for kernel in card.kernels:
        base = base_name(kernel.kernel)
        if base not in found:  # a program's name record cut inside the base name
            base = next((key for key in cut if base.startswith(key)), base)
        seen = found.get(base) or Launches(base, kernel.kernel, 0.0, 0)
        found[base] = Launches(base, seen.full, seen.program, seen.replayed + 1)
    return list(found.values())


def _missing(item: Launches) -> bool:
    if item.program is None:
        return item.replayed == 0
    return item.program - item.replayed >= MISMATCH


def _extra(item: Launches) -> bool:
    if item.program is None:
        return False
    return item.replayed - item.program >= MISMATCH


def kernel_cause(card: Card) -> str | None:
    """What the replay launched differently from the program, in words, naming the kernels
    (a missing copy kernel says what it copied for); None when both launched the same kernels
    or the program's are unknown."""
    items = launches(card)
    if items is None:
        return None
    missing = [item for item in items if _missing(item)]
    extra = [item for item in items if _extra(item)]
    causes = []
    copies = [item for item in missing if is_copy(item.full)]
    if copies:
        causes.append(
            f"the program ran a copy kernel, {_named(copies, 'program')}, that the replay did"
            " not: its input was likely a strided view; the replay's is contiguous"
        )
    others = [item for item in missing if not is_copy(item.full)]
    if others:
        causes.append(f"the program ran {_named(others, 'program')}, the replay did not")
    if extra:
        causes.append(f"the replay ran {_named(extra, 'replayed')}, the program did not")
    return "; ".join(causes) or None


def _named(items: list[Launches], side: str) -> str:
    """`` `a` (2 per call), `b` (1 more per call) and 3 more``: the first few, with the
    launches per call one side ran beyond the other's, where counted."""
    texts = []
    for item in items[:NAMED]:
        program, count = item.program, None
        if program is not None:
            count = program - item.replayed if side == "program" else item.replayed - program
        more = " more" if program and item.replayed else ""
        per_call = f" ({round(count, 2):g}{more} per call)" if count is not None else ""
        texts.append(f"`{item.label()}`{per_call}")
    rest = len(items) - NAMED
    return ", ".join(texts) + (f" and {rest} more" if rest > 0 else "")
