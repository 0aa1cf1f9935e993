"""How much time a card leaves on the table, from the figures the card already holds (no report
needed). One definition, whose columns add up at every level:

- A kernel's roof time is its executed work at the roof it is under: measured x pct_of_roof /
  100 (FLOPs over the binding roof, or for a kernel without FLOPs its bytes over the bandwidth
  of the level it uses most); its headroom = measured - roof. A kernel measured above its roof
  (a clock or counter error) is capped at its measured time, headroom 0, and flagged; a kernel
  without a roofline counts at its measured time: no recoverable time without evidence.
- A card's kernel roof time is the sum of its kernels' (time no kernel accounts for, a legacy
  card's kernels without durations, at its measured time), but never below the op's speed of
  light: kernels whose roofs sum below it moved fewer DRAM bytes than the compulsory ones
  (outputs still in L2 when they end; the bytes reach DRAM later, in another kernel's time),
  and count at the speed of light, the gap stated (`below_sol_us`). So measured = kernel roof
  + kernel headroom, and the kernels' own headroom = kernel headroom + below_sol. None when no
  kernel of the card has a roofline.
- The op's speed of light (SOL) is the larger of its nominal FLOPs at the dense peak of its
  dtype (the card's `roofline.peak_tflops`) and its compulsory bytes (`nominal_bytes`: each
  input read once, each output written once) at the DRAM bandwidth its kernels measured
  (median). Unknown (None, `sol_unknown` says why) without a nominal model, or when a bound the
  op has cannot be computed: FLOPs without a known peak never fall back to the bytes alone. An
  op measured faster than its SOL (a nominal model or peak wrong) is capped at its measured
  time and flagged: measured = at_sol + sol_headroom.
- overhead = kernel roof - at SOL (extra kernels such as layout transposes and workspace init,
  tile padding, extra bytes), never negative, so kernel headroom + overhead = SOL headroom.
- A stage sums its cards x calls; a card without a kernel roof (or a SOL) counts at its
  measured time in those columns and is counted (`cards_without_roof`, `cards_without_sol`);
  a stage where no card has one has None.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict, Field

from .model import Card, KernelCard
from .rollup import dominant


def _us(value: float) -> float:
    """Microseconds to the nanosecond (never -0.0)."""
    return round(value, 3) + 0.0


CAPPED = "capped at its measured time"


class KernelHeadroom(BaseModel):
    """One kernel against its own binding roof (us per call): measured = roof + headroom."""

    model_config = ConfigDict(extra="forbid")
    kernel: str
    measured_us: float
    roof_us: float = Field(description="its executed work at its binding roof")
    headroom_us: float = Field(description="measured - roof, never negative")
    binding: str | None = Field(description="compute, dram, l2 or l1; None: no roofline")
    pct_of_roof: float | None
    flag: str | None = Field(
        default=None,
        description="above its roof (capped at its measured time), or no roofline",
    )


class CardHeadroom(BaseModel):
    """One op shape: its kernels at their roofs, and the op at its speed of light (us per
    call; x calls for an inference). measured = kernel_roof + kernel_headroom = at_sol +
    sol_headroom; kernel_headroom + overhead = sol_headroom."""

    model_config = ConfigDict(extra="forbid")
    group: str
    stage: str
    calls: int
    measured_us: float = Field(description="summed kernel time of the card")
    kernel_roof_us: float | None = Field(
        description="its kernels at their own binding roofs (a kernel without a roofline or a"
        " duration at its measured time), at least at_sol_us; None: no kernel has a roofline"
    )
    kernel_headroom_us: float | None = Field(
        description="measured - kernel_roof_us: the sum of its kernels' headroom_us less"
        " below_sol_us"
    )
    below_sol_us: float = Field(
        default=0.0,
        description="how far its kernels' own roofs fall below at_sol_us (fewer DRAM bytes than"
        " the compulsory ones: outputs still in L2); kernel_roof_us counts them at the SOL",
    )
    sol_us: float | None = Field(
        description="the op's speed of light as modelled (above measured_us: flagged, capped in"
        " at_sol_us); None: unknown, sol_unknown says why"
    )
    sol_unknown: str | None = Field(default=None, description="why sol_us is None")
    sol_bound: str | None = Field(description="compute or dram: which bound gave sol_us")
    sol_pct: float | None = Field(description="sol_us / measured_us, %")
    at_sol_us: float | None = Field(
        default=None, description=f"sol_us, {CAPPED} when it is above it"
    )
    sol_headroom_us: float | None = Field(description="measured - at_sol_us")
    overhead_us: float | None = Field(
        description="kernel_roof_us - at_sol_us: work beyond the op's own (extra kernels,"
        " padding, extra bytes), never negative"
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
    if roof is None or pct is None or pct < 0:
        why = "no roofline" if pct is None else f"{pct:g} % of its roof, impossible"
        return KernelHeadroom(kernel=kernel.kernel, measured_us=measured, roof_us=measured,
                              headroom_us=0.0, binding=None, pct_of_roof=pct,
                              flag=f"{why}: counted at its measured time")  # fmt: skip
    flag = None
    if pct > 100:
        flag = (
            f"measured at {pct:g} % of its {roof.binding} roof: a clock or counter error;"
            f" {CAPPED} (0 headroom)"
        )
    at_roof = _us(min(measured * pct / 100, measured))
    return KernelHeadroom(
        kernel=kernel.kernel,
        measured_us=measured,
        roof_us=at_roof,
        headroom_us=_us(measured - at_roof),
        binding=roof.binding,
        pct_of_roof=pct,
        flag=flag,
    )


def speed_of_light(card: Card) -> tuple[float | None, str | None, str | None]:
    """(us, bound, None) of the op's nominal work at the device's peaks; (None, None, why)
    when unknown: no nominal model, or a bound the op has (FLOPs, bytes) that cannot be
    computed (no peak for its dtype, no DRAM bandwidth measured): the other bound alone would
    understate it. A negative figure (a card from elsewhere) is as unknown as a missing one,
    and a peak or bandwidth of 0 too: never a bound of its own."""
    if not card.nominal_mac_flops and not card.nominal_bytes:
        return None, None, "no nominal model (FLOPs or compulsory bytes) for the op"
    for name, work in (("FLOPs", card.nominal_mac_flops), ("bytes", card.nominal_bytes)):
        if work is not None and work < 0:
            return None, None, f"its nominal {name} are negative ({work:,}): unknown"
    bounds: dict[str, float] = {}
    peak = card.roofline.peak_tflops if card.roofline is not None else None
    if card.nominal_mac_flops:
        if peak is None or peak <= 0:
            return None, None, "the compute peak of its dtype is unknown"
        bounds["compute"] = card.nominal_mac_flops / (peak * 1e12) * 1e6
    dram = [
        bw
        for k in card.kernels
        if k.roofline and (bw := k.roofline.bandwidth_tbps.get("dram")) is not None and bw > 0
    ]
    if card.nominal_bytes:
        if not dram:
            return None, None, "no DRAM bandwidth measured"
        bounds["dram"] = card.nominal_bytes / (statistics.median(dram) * 1e12) * 1e6
    bound = max(bounds, key=lambda b: bounds[b])
    return _us(bounds[bound]), bound, None


def card_headroom(card: Card) -> CardHeadroom | None:
    """The card's headroom; None for a card without a total time (failed, untimed)."""
    if card.summed_kernel_us is None or not card.kernels:
        return None
    pairs = [(k, h) for k in card.kernels if (h := kernel_headroom(k)) is not None]
    rows = [h for _, h in pairs]
    top = dominant(card.kernels)
    measured = _us(card.summed_kernel_us)
    flags = [f"{r.kernel}: {r.flag}" for r in rows if r.flag and r.pct_of_roof is not None]
    sol, bound, unknown = speed_of_light(card)
    at_sol = None if sol is None else min(sol, measured)
    if sol is not None and sol > measured:
        flags.append(
            f"faster than its speed of light ({sol:g} us): nominal model or peak wrong; {CAPPED}"
        )
    roof = headroom = None
    below = 0.0
    if any(r.binding is not None for r in rows):
        # time no kernel accounts for (a legacy card's kernels without durations) claims nothing
        roofs = _us(measured - min(_us(sum(r.headroom_us for r in rows)), measured))
        below = _us(max((at_sol or 0.0) - roofs, 0.0))
        roof = _us(roofs + below)
        headroom = _us(measured - roof)
    extra = sum(h.roof_us for k, h in pairs if k is not top)
    return CardHeadroom(
        group=card.group,
        stage=card.stage,
        calls=card.calls,
        measured_us=measured,
        kernel_roof_us=roof,
        kernel_headroom_us=headroom,
        below_sol_us=below,
        sol_us=sol,
        sol_unknown=unknown,
        sol_bound=bound,
        sol_pct=round(100 * sol / measured, 2) if sol is not None and measured else None,
        at_sol_us=at_sol,
        sol_headroom_us=None if at_sol is None else _us(measured - at_sol),
        overhead_us=None if roof is None or at_sol is None else _us(roof - at_sol),
        extra_kernels_us=_us(extra),
        kernels=rows,
        flags=flags,
    )


class StageTotals(BaseModel):
    """A stage's headroom per inference (a card counts x its calls): measured = kernel_roof +
    recoverable_at_kernel_roof = at_sol + recoverable_at_sol. A card without a kernel roof (or
    a speed of light) counts at its measured time in those columns; failed and untimed cards
    count nowhere but in `cards_without_figures`; where every card is, the time is unknown
    (None), never 0."""

    model_config = ConfigDict(extra="forbid")
    stage: str
    cards: int
    cards_without_figures: int = Field(description="failed or untimed: not counted")
    measured_us: float | None = Field(description="None: no card of the row has a time")
    kernel_roof_us: float | None = Field(description="None: no timed card has a kernel roof")
    recoverable_at_kernel_roof_us: float | None = Field(description="measured - kernel_roof")
    cards_without_roof: int = Field(
        default=0, description="timed cards without a kernel roof: at their measured time"
    )
    at_sol_us: float | None = Field(
        description="the cards at their speed of light; None: no timed card has one"
    )
    recoverable_at_sol_us: float | None = Field(description="measured - at_sol")
    cards_without_sol: int = Field(description="timed cards without a SOL: at their measured time")
    capped_cards: int = Field(
        default=0,
        description="cards with a figure capped at its measured time (a kernel above its roof,"
        " an op faster than its speed of light; their flags say which)",
    )
    cards_below_sol: int = Field(
        default=0,
        description="cards whose kernels' own roofs fall below the op's speed of light: counted"
        " at it in kernel_roof_us",
    )
    below_sol_us: float = Field(default=0.0, description="their gap, per inference")


OVERALL_STAGE = "(all stages)"  # the overall row's label, which no stage classify names has


def is_reserved_stage(name: str) -> bool:
    """True for a label in parentheses (`(all stages)`): the presentation's own rows; classify
    names no stage so (a report named so is labelled by its file name instead)."""
    return name.startswith("(") and name.endswith(")")


def stage_totals(
    cards: Iterable[Card], key: Callable[[Card], str] = lambda card: card.stage
) -> dict[str, StageTotals]:
    """Totals per `key` (the stage; a constant for one overall row), in the cards' order of
    first appearance."""
    groups: dict[str, list[tuple[Card, CardHeadroom | None]]] = {}
    for card in cards:
        groups.setdefault(key(card), []).append((card, card_headroom(card)))
    return {name: _totals(name, members) for name, members in groups.items()}


def _floor(timed: list[tuple[int, CardHeadroom, float | None]]) -> float | None:
    """Per inference, each card at its floor (at its measured time without one); None when
    no card has a floor."""
    if all(floor is None for _, _, floor in timed):
        return None
    return _us(sum(n * (r.measured_us if floor is None else floor) for n, r, floor in timed))


def _totals(name: str, members: list[tuple[Card, CardHeadroom | None]]) -> StageTotals:
    """One row of totals from its cards and their headroom (None: failed or untimed)."""
    timed = [(card.calls, room) for card, room in members if room is not None]
    measured = _us(sum(n * r.measured_us for n, r in timed))
    roof = _floor([(n, r, r.kernel_roof_us) for n, r in timed])
    sol = _floor([(n, r, r.at_sol_us) for n, r in timed])
    return StageTotals(
        stage=name,
        cards=len(members),
        cards_without_figures=len(members) - len(timed),
        measured_us=measured if timed or not members else None,  # every card untimed: unknown
        kernel_roof_us=roof,
        recoverable_at_kernel_roof_us=None if roof is None else _us(measured - roof),
        cards_without_roof=sum(r.kernel_roof_us is None for _, r in timed),
        at_sol_us=sol,
        recoverable_at_sol_us=None if sol is None else _us(measured - sol),
        cards_without_sol=sum(r.at_sol_us is None for _, r in timed),
        capped_cards=sum(any(CAPPED in flag for flag in r.flags) for _, r in timed),
        cards_below_sol=sum(r.below_sol_us > 0 for _, r in timed),
        below_sol_us=_us(sum(n * r.below_sol_us for n, r in timed)),
    )
