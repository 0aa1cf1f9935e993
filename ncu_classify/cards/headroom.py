"""How much time a card leaves on the table: each kernel against its own binding roof, and the
op against its speed of light, from the figures the card already holds (no report needed).

- A kernel's roof time is its executed work at the roof it is under: measured x pct_of_roof /
  100 (FLOPs over the binding roof, or for a kernel without FLOPs its bytes over the bandwidth
  of the level it uses most). Headroom = measured - roof, never negative; a kernel measured
  above its roof is flagged (a clock or counter error), its headroom 0. A kernel without a
  roofline counts at its measured time: no recoverable time is claimed without evidence.
- The op's speed of light is the larger of its nominal FLOPs at the dense peak of its dtype
  (the card's `roofline.peak_tflops`: the report's own peak x the clock seen) and its
  compulsory bytes (`nominal_bytes`: each input read once, each output written once) at the
  DRAM bandwidth its kernels measured (median). Ops without a FLOP model (elementwise, copies)
  have the bytes bound only.
- measured - speed of light = execution (measured - the kernels' roof time, or the speed of
  light where the roofs fall below it: DRAM writes still in L2 when a kernel ends) + algorithm
  overhead (the roof time above the speed of light: extra kernels such as layout transposes
  and workspace init, tile padding, extra bytes). Time the card's kernels do not account for
  (a legacy card's kernels without durations) counts as at its roof: nothing is claimed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict, Field

from .model import Card, KernelCard
from .rollup import dominant


def _us(value: float) -> float:
    return round(value, 3)


class KernelHeadroom(BaseModel):
    """One kernel against its own binding roof (us per call)."""

    model_config = ConfigDict(extra="forbid")
    kernel: str
    measured_us: float
    roof_us: float = Field(description="its executed work at its binding roof")
    headroom_us: float = Field(description="measured - roof, never negative")
    binding: str | None = Field(description="compute, dram, l2 or l1; None: no roofline")
    pct_of_roof: float | None
    flag: str | None = Field(default=None, description="above its roof, or no roofline")


class CardHeadroom(BaseModel):
    """One op shape: its kernels at their roofs, and the op at its speed of light (us per
    call; x calls for an inference)."""

    model_config = ConfigDict(extra="forbid")
    group: str
    stage: str
    calls: int
    measured_us: float = Field(description="summed kernel time of the card")
    kernel_roof_us: float = Field(description="every kernel at its own binding roof")
    kernel_headroom_us: float = Field(
        description="execution: measured - the larger of kernel_roof_us and sol_us, never negative"
    )
    sol_us: float | None = Field(description="the op's speed of light; None: no model")
    sol_bound: str | None = Field(description="compute or dram: which bound gave sol_us")
    sol_pct: float | None = Field(description="sol_us / measured_us, %")
    sol_headroom_us: float | None = Field(description="measured - sol_us, never negative")
    overhead_us: float | None = Field(
        description="kernel_roof_us - sol_us: work beyond the op's own (extra kernels, padding,"
        " extra bytes), never negative"
    )
    extra_kernels_us: float = Field(
        description="roof time of the kernels besides the dominant one (transposes, init, bias)"
    )
    kernels: list[KernelHeadroom]
    flags: list[str] = Field(default_factory=list)


def kernel_headroom(kernel: KernelCard) -> KernelHeadroom | None:
    """A kernel against its roof; None without a duration."""
    measured = kernel.metrics.get("dur_us")
    if measured is None:
        return None
    roof = kernel.roofline
    pct = roof.pct_of_roof if roof is not None else None
    if pct is None or pct < 0:
        why = "no roofline" if pct is None else f"{pct:g} % of its roof, impossible"
        return KernelHeadroom(kernel=kernel.kernel, measured_us=measured, roof_us=measured,
                              headroom_us=0.0, binding=None, pct_of_roof=pct,
                              flag=f"{why}: counted at its measured time")  # fmt: skip
    flag = None
    if pct > 100:
        flag = f"measured at {pct:g} % of its {roof.binding} roof: a clock or counter error"  # type: ignore[union-attr]
    at_roof = min(measured * pct / 100, measured)
    return KernelHeadroom(
        kernel=kernel.kernel,
        measured_us=measured,
        roof_us=_us(at_roof),
        headroom_us=_us(measured - at_roof),
        binding=roof.binding,  # type: ignore[union-attr]
        pct_of_roof=pct,
        flag=flag,
    )


def speed_of_light(card: Card) -> tuple[float | None, str | None]:
    """(us, bound) of the op's nominal work at the device's peaks; (None, None) without."""
    bounds: dict[str, float] = {}
    peak = card.roofline.peak_tflops if card.roofline is not None else None
    if card.nominal_mac_flops and peak:
        bounds["compute"] = card.nominal_mac_flops / (peak * 1e12) * 1e6
    dram = [
        bw for k in card.kernels if k.roofline and (bw := k.roofline.bandwidth_tbps.get("dram"))
    ]
    if card.nominal_bytes and dram:
        bounds["dram"] = card.nominal_bytes / (statistics.median(dram) * 1e12) * 1e6
    if not bounds:
        return None, None
    bound = max(bounds, key=lambda b: bounds[b])
    return _us(bounds[bound]), bound


def card_headroom(card: Card) -> CardHeadroom | None:
    """The card's headroom; None for a card without a total time (failed, untimed)."""
    if card.summed_kernel_us is None or not card.kernels:
        return None
    pairs = [(k, h) for k in card.kernels if (h := kernel_headroom(k)) is not None]
    rows = [h for _, h in pairs]
    top = dominant(card.kernels)
    measured = card.summed_kernel_us
    # time no kernel accounts for (a legacy card's kernels without durations) claims nothing
    unattributed = max(measured - sum(r.measured_us for r in rows), 0.0)
    at_roof = min(_us(sum(r.roof_us for r in rows) + unattributed), measured)
    sol, bound = speed_of_light(card)
    flags = [f"{r.kernel}: {r.flag}" for r in rows if r.flag and r.pct_of_roof is not None]
    if sol is not None and sol > measured:
        flags.append(f"faster than its speed of light ({sol:g} us): nominal model or peak wrong")
    extra = sum(h.roof_us for k, h in pairs if k is not top)
    # no kernel can beat the op's speed of light: a roof below it (DRAM writes still in L2 when
    # the kernel ends) is taken at the speed of light, so execution + overhead = measured - SOL
    floor = max(at_roof, sol) if sol is not None else at_roof
    return CardHeadroom(
        group=card.group,
        stage=card.stage,
        calls=card.calls,
        measured_us=measured,
        kernel_roof_us=at_roof,
        kernel_headroom_us=_us(max(measured - floor, 0.0)),
        sol_us=sol,
        sol_bound=bound,
        sol_pct=round(100 * sol / measured, 2) if sol is not None and measured else None,
        sol_headroom_us=_us(max(measured - sol, 0.0)) if sol is not None else None,
        overhead_us=_us(max(at_roof - sol, 0.0)) if sol is not None else None,
        extra_kernels_us=_us(extra),
        kernels=rows,
        flags=flags,
    )


class StageTotals(BaseModel):
    """A stage's headroom per inference (a card counts x its calls): measured, at kernel roofs,
    at speed of light. Failed and untimed cards count nowhere but in `cards_without_figures`."""

    model_config = ConfigDict(extra="forbid")
    stage: str
    cards: int
    cards_without_figures: int = Field(description="failed or untimed: not counted")
    measured_us: float
    kernel_roof_us: float
    recoverable_at_kernel_roof_us: float
    sol_us: float | None = Field(description="None unless every timed card has a model")
    recoverable_at_sol_us: float | None = Field(
        description="over the cards that have a model; None when none has"
    )
    cards_without_sol: int


def stage_totals(
    cards: Iterable[Card], key: Callable[[Card], str] = lambda card: card.stage
) -> dict[str, StageTotals]:
    """Totals per `key` (the stage; a constant for one overall row), in the cards' order of
    first appearance."""
    groups: dict[str, list[tuple[Card, CardHeadroom | None]]] = {}
    for card in cards:
        groups.setdefault(key(card), []).append((card, card_headroom(card)))
    return {name: _totals(name, members) for name, members in groups.items()}


def _totals(name: str, members: list[tuple[Card, CardHeadroom | None]]) -> StageTotals:
    timed = [(card.calls, room) for card, room in members if room is not None]
    modelled = [(calls, room) for calls, room in timed if room.sol_us is not None]
    return StageTotals(
        stage=name,
        cards=len(members),
        cards_without_figures=len(members) - len(timed),
        measured_us=_us(sum(n * r.measured_us for n, r in timed)),
        kernel_roof_us=_us(sum(n * r.kernel_roof_us for n, r in timed)),
        recoverable_at_kernel_roof_us=_us(sum(n * r.kernel_headroom_us for n, r in timed)),
        sol_us=(
            _us(sum(n * (r.sol_us or 0.0) for n, r in modelled))
            if modelled and len(modelled) == len(timed)
            else None
        ),
        recoverable_at_sol_us=(
            _us(sum(n * (r.sol_headroom_us or 0.0) for n, r in modelled)) if modelled else None
        ),
        cards_without_sol=len(timed) - len(modelled),
    )
