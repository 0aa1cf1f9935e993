"""Cards as pandas DataFrames: one row per card or per kernel, every metric a column whose name
carries its unit (`dur_us`, `grid_blocks`, `peak_dram_bytes_per_cycle`), and a card's times
what they are per (`summed_kernel_us_per_call`, x `calls` per inference), ready to slice.

    import ncu_classify
    kernels = ncu_classify.load_cards("cards.json", level="kernel")

A missing value is NaN (None for text), never 0. Column order is fixed, rows keep the file's
order, so the CSV and Parquet forms are deterministic. `level="coverage"` gives the recorded
program's coverage instead: the rows of `summary --by coverage`.
"""

from __future__ import annotations

import json
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from ..cards.fidelity import fidelity
from ..cards.model import Card, CardFile, KernelCard
from ..cards.rollup import named_dominant
from ..core.metrics import CATALOG
from .coverage import CoverageRow, coverage_rows
from .next_measured import TRIES_COLUMNS, tries_rows
from .summary import PER

if TYPE_CHECKING:
    from ..tries.results import TryResults

Level = Literal["card", "kernel", "coverage"]
# unit -> the suffix a column name gets unless the key already says it
_SUFFIX = {
    "%": "pct",
    "us": "us",
    "KB": "kb",
    "MB": "mb",
    "byte": "bytes",
    "GHz": "ghz",
    "FLOP": "flop",
    "FLOP/cycle": "flop_per_cycle",
    "inst": "inst",
    "inst/cycle": "inst_per_cycle",
    "cycles": "cycles",
    "blocks/SM": "blocks_per_sm",
    "registers/thread": "per_thread",
    "threads": "threads",
    "blocks": "blocks",
    "waves": "waves",
    "ratio": "ratio",
    "byte/cycle": "bytes_per_cycle",
}
_SAYS = {"bytes": ("b", "bytes"), "flop": ("flops", "flop"), "cycles": ("cycles",)}


def column_name(key: str, unit: str) -> str:
    """The column of a card metric: its key, with its unit appended unless the key says it."""
    suffix = _SUFFIX.get(unit, unit.lower().replace("/", "_per_"))
    tokens = key.split("_")
    if key.endswith(f"_{suffix}") or key == suffix:
        return key
    head, _, per = suffix.partition("_per_")
    if any(t in tokens for t in _SAYS.get(head, (head,))):  # the key names the quantity
        return f"{key}_per_{per}" if per else key
    return f"{key}_{suffix}"


METRIC_COLUMNS = {spec.key: column_name(spec.key, spec.card_unit) for spec in CATALOG}


def load_cards(path: str | Path, level: Level = "card") -> pd.DataFrame:
    """A cards file (ours or legacy) as a DataFrame: one row per card (its dominant kernel's
    figures), per kernel (with its card's stage, group and class), or per recorded stage and
    piece of work no card covers (coverage). A file that cannot be read raises
    `ncu_classify.CardsError` (one line naming the file and field)."""
    from ..cards.files import load_card_file

    return cards_frame(load_card_file(Path(path)), level)


def cards_frame(cards: CardFile, level: Level = "card") -> pd.DataFrame:
    """`load_cards` for a CardFile already in memory."""
    if level not in ("card", "kernel", "coverage"):
        raise ValueError(f"level must be 'card', 'kernel' or 'coverage', not {level!r}")
    if level == "coverage":
        return coverage_frame(cards)
    if level == "kernel":
        rows = [_kernel_row(card, kernel) for card in cards.cards for kernel in card.kernels]
    else:
        rows = [_card_row(card) for card in cards.cards]
    columns = _columns()
    frame: pd.DataFrame = pd.DataFrame(rows, columns=columns).astype(_dtypes(columns))
    return frame


def coverage_frame(cards: CardFile) -> pd.DataFrame:
    """The rows of `summary --by coverage` (a stage's own row has item `(stage)`), its columns
    as in the CSV (`real_us_per_inference`...); calls and light shapes as nullable integers,
    times and shares as floats, NaN/NA where unknown."""
    names = [f.name for f in dataclass_fields(CoverageRow)]
    rows = [[getattr(row, name) for name in names] for row in coverage_rows(cards)]
    columns = [PER["coverage"].get(name, name) for name in names]  # times per inference
    kinds = {"stage": object, "item": object, "why": object, "basis": object}
    counts = ("calls", "light_shapes")
    dtypes = {n: kinds.get(n, "Int64" if n.endswith(counts) else "float64") for n in columns}
    frame: pd.DataFrame = pd.DataFrame(rows, columns=columns).astype(dtypes)
    return frame


def tries_frame(results: TryResults) -> pd.DataFrame:
    """What `try` measured, one row per alternative of every move (the original first, its
    `label` `as_recorded`): kernels, time per call and saving per inference with their
    intervals, numerics, and whether it won; NaN/NA where not measured."""
    kinds = {"rank": "Int64", "calls": "Int64", "kernels": "Int64", "within_tolerance": "boolean",
             "winner": bool}  # fmt: skip
    floats = {c for c in TRIES_COLUMNS if c.startswith(("us_", "saving", "max_rel"))}
    dtypes = {c: kinds.get(c, "float64" if c in floats else object) for c in TRIES_COLUMNS}
    frame: pd.DataFrame = pd.DataFrame(tries_rows(results), columns=TRIES_COLUMNS).astype(dtypes)
    return frame


Cell = str | int | float | bool | None  # one cell of a card or kernel row
Row = dict[str, Cell]  # column name -> cell


def _card_fields(card: Card) -> Row:
    roof = card.roofline
    measured = fidelity(card)
    return {
        "stage": card.stage,
        "group": card.group,
        "op": card.op,
        "shape": json.dumps(card.shape_parameters, sort_keys=True),
        "status": card.status,
        "primary": card.primary,
        "gpu": card.gpu.name,
        "kernels": len(card.kernels),
        "summed_kernel_us_per_call": card.summed_kernel_us,
        "nominal_mac_flop": card.nominal_mac_flops,
        "card_achieved_tflops": card.achieved_tflops,
        "mfu_pct": roof.mfu_pct if roof else None,
        "mfu_clock_ghz": roof.peak_clock_ghz if roof else None,
        "mfu_max_clock_pct": roof.mfu_max_clock_pct if roof else None,
        "useful_over_executed_ratio": roof.useful_over_executed if roof else None,
        "calls": card.calls,
        "real_us_per_call": card.real_us,
        "real_kernels": card.real_kernels,
        "fidelity_ratio": measured.ratio if measured else None,
        "settled": card.settled.primary if card.settled else None,
        "settled_by": card.settled.settled_by if card.settled else None,
        "captured_light": bool(card.captured_light),
    }


def _kernel_fields(kernel: KernelCard | None) -> Row:
    if kernel is None:
        return {}
    roof, margin = kernel.roofline, kernel.margin
    hot = {kind: units[0] for kind, units in kernel.hot_units.items() if units}
    fields: Row = {
        "kernel": kernel.kernel,
        "classification": kernel.classification,
        "borderline": margin.borderline if margin else None,
        "rival_unchecked": margin.rival_unchecked if margin else None,
        "margin_metric": margin.metric if margin else None,
        "margin_distance": margin.distance if margin else None,
        "hot_sm_unit": hot["sm"].label if "sm" in hot else None,
        "hot_sm_pct": hot["sm"].pct if "sm" in hot else None,
        "hot_memory_unit": hot["memory"].label if "memory" in hot else None,
        "hot_memory_pct": hot["memory"].pct if "memory" in hot else None,
        **_drill_fields(kernel),
    }
    if roof is not None:
        fields.update(
            flop_family=roof.family,
            executed_flop=roof.executed_flops,
            achieved_tflops=roof.achieved_tflops,
            compute_ceiling_tflops=roof.compute_ceiling_tflops,
            binding_roof=roof.binding,
            roof_tflops=roof.roof_tflops,
            pct_of_roof=roof.pct_of_roof,
            **{f"intensity_{k}_flop_per_byte": v for k, v in roof.intensity.items()},
            **{f"bandwidth_{k}_tbps": v for k, v in roof.bandwidth_tbps.items()},
        )
    fields.update({METRIC_COLUMNS[k]: v for k, v in kernel.metrics.items() if k in METRIC_COLUMNS})
    return fields


def _drill_fields(kernel: KernelCard) -> Row:
    """A kernel's drill-down in three columns: its settled class, CPI and top stall reasons."""
    drill = kernel.drill_down
    if drill is None:
        return {"drill_settled": None, "cpi": None, "stall_top_reasons": None}
    shares = {s.reason: s.share_pct for s in drill.stalls}
    return {
        "drill_settled": drill.settled,
        "cpi": drill.cpi,
        "stall_top_reasons": ", ".join(
            f"{r} {shares[r]:.1f} %" if r in shares else r for r in drill.top_reasons
        ),
    }


def _card_row(card: Card) -> Row:
    top = named_dominant(card)
    return {**_card_fields(card), **_kernel_fields(top)}


def _kernel_row(card: Card, kernel: KernelCard) -> Row:
    return {**_card_fields(card), **_kernel_fields(kernel)}


CARD_COLUMNS = [
    "stage",
    "group",
    "op",
    "shape",
    "status",
    "primary",
    "gpu",
    "kernels",
    "summed_kernel_us_per_call",  # one call of the shape's op (calls: per inference)
    "nominal_mac_flop",
    "card_achieved_tflops",
    "mfu_pct",
    "mfu_clock_ghz",
    "mfu_max_clock_pct",
    "useful_over_executed_ratio",
    "calls",
    "real_us_per_call",  # the program's kernel time per call (recorded on a GPU)
    "real_kernels",
    "fidelity_ratio",  # summed_kernel_us_per_call / real_us_per_call
    "settled",  # the class a drill-down settled the card on
    "settled_by",
    "captured_light",  # capture --light-after: no sm_pct, l2_pct, hot units or roofline FLOPs
]
CARD_TEXT = CARD_COLUMNS[:7]  # stage .. gpu: the text columns of a card
KERNEL_TEXT = ("kernel", "classification", "margin_metric", "hot_sm_unit", "hot_memory_unit")
_TEXT = frozenset(
    [*CARD_TEXT, *KERNEL_TEXT, "flop_family", "binding_roof", "settled", "settled_by",
     "drill_settled", "stall_top_reasons"]
)  # fmt: skip
_ROOF = [
    "flop_family",
    "executed_flop",
    "achieved_tflops",
    "compute_ceiling_tflops",
    "binding_roof",
    "roof_tflops",
    "pct_of_roof",
    *(f"intensity_{level}_flop_per_byte" for level in ("dram", "l2", "l1")),
    *(f"bandwidth_{level}_tbps" for level in ("dram", "l2", "l1")),
]


def _columns() -> list[str]:
    card = list(CARD_COLUMNS)
    kernel = [
        "kernel",
        "classification",
        "borderline",
        "rival_unchecked",
        "margin_metric",
        "margin_distance",
        "hot_sm_unit",
        "hot_sm_pct",
        "hot_memory_unit",
        "hot_memory_pct",
        "drill_settled",
        "cpi",
        "stall_top_reasons",
        *_ROOF,
        *METRIC_COLUMNS.values(),
    ]
    return card + kernel


def _dtypes(columns: list[str]) -> dict[str, str | type]:
    """Text columns as object, `borderline` and `rival_unchecked` as nullable boolean,
    `captured_light` as boolean, `kernels` as int, the rest float (NaN for missing)."""
    out: dict[str, str | type] = {}
    for name in columns:
        if name in _TEXT:
            out[name] = object
        elif name in ("borderline", "rival_unchecked"):
            out[name] = "boolean"
        elif name == "captured_light":
            out[name] = bool
        elif name in ("kernels", "calls"):
            out[name] = "int64"
        else:
            out[name] = "float64"
    return out
