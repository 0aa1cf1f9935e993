"""`ncu-classify report`: one self-contained HTML page (jinja2 with autoescape; inline CSS, SVG
and a few lines of JavaScript, nothing fetched, so it opens offline for years) or a Markdown
summary for a pull request, from one or more cards files overlaid."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from .._version import __version__
from ..cards.model import SCOPE, CardFile
from ..cards.rollup import KernelClassRow, SummaryRow
from ..core.errors import UsageError
from ..core.paths import short_names
from ..core.text import counted, figure, md_code, md_text, printable
from .coverage import BASIS_SHORT, light_clause, millis
from .next_measured import measured_text
from .next_text import next_markdown, stage_cells, stage_notes
from .page_chart import DASHES, build_chart
from .page_view import SHOWN_CARDS, FileView, PageView, build_view
from .summary import light_lines, stability_lines

if TYPE_CHECKING:
    from ..tries.results import TryResults

    Tried = tuple[str, TryResults]

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
MARKER_NAMES = {
    "circle": "\u25cf",
    "square": "\u25a0",
    "triangle": "\u25b2",
    "diamond": "\u25c6",
    "down": "\u25bc",
    "plus": "\u271a",
    "star": "\u2605",
    "hexagon": "\u2b22",
}
TOP_CONSUMERS = 10


MAX_FILES = 8  # one marker shape and one dash pattern each


def labels_for(paths: list[Path]) -> list[str]:
    """A short, distinct label per cards file: its name, with as many folders in front as it
    takes to tell files apart (and one for a name that says nothing, `cards.json`)."""
    return short_names(paths)


def check_files(paths: list[Path]) -> None:
    """At most MAX_FILES files (markers must tell them apart), none given twice."""
    if len(paths) > MAX_FILES:
        raise UsageError(
            f"{len(paths)} cards files: a report overlays at most {MAX_FILES} (one marker each)"
        )
    seen: dict[str, Path] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{path}: given twice (also as {seen[real]})")
        seen[real] = path


def _ms(us: float | None) -> str:
    """Microseconds as a milliseconds figure without its unit (`258.8`, `0.189`); `-` if None."""
    return "-" if us is None else millis(us).removesuffix(" ms")


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _visible(value: Any) -> Any:
    """Control and bidi characters of user text shown as escapes (`\\u202e`), so that a name
    cannot reorder the numbers around it nor drive a terminal that prints the file."""
    return printable(value, keep_newlines=True) if isinstance(value, str) else value


def page_html(files: list[tuple[str, CardFile]], title: str, tries: Sequence[Tried] = ()) -> str:
    """The HTML page of `files` ((label, cards) pairs); moves `try` measured (`tries`) show
    what it measured."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every string from a file is text, never markup
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        finalize=_visible,
    )
    view = build_view(files, title, tries)
    context: dict[str, Any] = {
        "measured_text": measured_text,
        "view": view,
        "chart": build_chart(
            view.points, view.ceilings, [(MARKER_NAMES[f.marker], f.label) for f in view.files]
        ),
        "colours": dict(view.classes),
        "marker_names": MARKER_NAMES,
        "counted": counted,
        "dashes": DASHES,
        "version": __version__,
        "scope": SCOPE,
        "fmt": figure,
        "stage_cells": stage_cells,
        "stage_notes": stage_notes,
        "num": _num,
        "inference_us": _inference_us,
        "ms": _ms,
        "light_clause": light_clause,
        "basis": BASIS_SHORT,
        "shown_cards": SHOWN_CARDS,
    }
    return environment.get_template("page.html.j2").render(context)


def page_markdown(
    files: list[tuple[str, CardFile]], title: str, tries: Sequence[Tried] = ()
) -> str:
    """A Markdown summary: inputs, time per stage and class, the top time consumers."""
    view = build_view(files, title, tries)
    lines = [f"## {md_text(title)}", ""]
    for f in view.files:
        header = dict(f.header)
        lines.append(
            f"- {MARKER_NAMES[f.marker]} {md_code(f.label)}: "
            + md_text(
                f"{header['GPU']}; driver {header['driver']}, ncu {header['Nsight Compute']},"
                f" torch {header['torch']}, cuDNN {header['cuDNN']}; rules {header['rules']};"
                f" captured {header['captured']}; {counted(int(header['cards']), 'card')}"
            )
        )
        lines += [f"  - **{md_text(header['projection'])}**"] if "projection" in header else []
        lines += [f"  - **warning**: {md_text(w)}" for w in f.warnings]
    lines += _coverage_markdown(view)
    lines += _fidelity_markdown(view)
    lines += _stability_markdown(files)
    lines += _time_table(
        view,
        "### Time per stage and class",
        "| file | stage | class | cards | calls | kernel us per inference | share of stage |",
        lambda f: [(r, f"{md_text(r.primary)} | {r.cards} | {r.calls}") for r in f.stages],
    )
    lines += _time_table(
        view,
        "### Time per stage and kernel class (each kernel under its own class)",
        "| file | stage | kernel class | kernels | kernel us per inference | share of stage |",
        lambda f: [(r, f"{md_text(r.kernel_class)} | {r.kernels}") for r in f.kernel_classes],
    )
    lines += ["", f"### Top {TOP_CONSUMERS} time consumers per file", ""]
    lines += [
        "| file | shape | class | calls | us per call | us per inference | % of stage"
        " | % of roof | roof | hot unit |"
    ]
    lines += ["|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    lines += _top_rows(view)
    for f in view.files:  # the headroom and the next moves, one level down
        headroom = (
            next_markdown(f.headroom, top=5, coverage=False)
            .replace("\n## ", "\n### ")
            .replace("### N", "#### N")
        )
        lines += ["", headroom.removeprefix("## ").join(["### ", ""]).rstrip("\n")]
    return "\n".join(lines) + "\n"


def _time_table(
    view: PageView,
    title: str,
    header: str,
    cells: Callable[[FileView], list[tuple[SummaryRow | KernelClassRow, str]]],
) -> list[str]:
    """A Markdown table of kernel time per inference per stage: file, stage, the `cells` a
    view gives (class and counts), time and share of the stage."""
    lines = ["", title, "", header, "|---|---|---|" + "---:|" * (header.count("|") - 4)]
    for f in view.files:
        for row, middle in cells(f):
            share = "-" if row.share_of_stage is None else f"{100 * row.share_of_stage:.1f} %"
            untimed = f" ({row.untimed} without time)" if row.untimed else ""
            us = "unknown" if row.kernel_us is None else f"{row.kernel_us:,.1f}"
            lines.append(
                f"| {MARKER_NAMES[f.marker]} {md_code(f.label)} | {md_text(row.stage)} |"
                f" {middle} | {us}{untimed} | {share} |"
            )
    return lines


def _coverage_markdown(view: PageView) -> list[str]:
    """The Coverage section in Markdown: per stage, then what no card covers (at most 20 per
    file, largest first), or per file the sentence saying coverage is unknown."""
    lines = ["", "### Coverage of the recorded program", ""]
    known = [f for f in view.files if not f.coverage.unknown]
    lines += [
        f"- {MARKER_NAMES[f.marker]} {md_code(f.label)}: {md_text(str(f.coverage.unknown))}"
        for f in view.files
        if f.coverage.unknown
    ]
    if not known:
        return lines
    lines += [
        *([""] if len(known) < len(view.files) else []),
        "| file | stage | measured by | program ms per inference | covered |"
        " replayed ms per inference |",
        "|---|---|---|---:|---:|---:|",
    ]
    for f in known:
        for s in f.coverage.stages:
            share = "-" if s.coverage_pct is None else f"{s.coverage_pct:.1f} %"
            share += light_clause(s)
            lines.append(
                f"| {MARKER_NAMES[f.marker]} {md_code(f.label)} | {md_text(s.stage)} |"
                f" {BASIS_SHORT[s.basis]} | {_ms(s.real_us)} | {share} | {_ms(s.replayed_us)} |"
            )
    for f in known:
        lines += [f"- {md_text(line)}" for line in f.coverage.unknown_stages]
    items = [(f, stage, u) for f in known for stage, u in f.coverage.uncovered]
    lines += ["", "Not covered, largest first:", ""] if items else ["", "Nothing uncovered."]
    if items:
        lines += ["| file | stage | not covered | why | calls | program ms per inference |"]
        lines += ["|---|---|---|---|---:|---:|"]
    for f, stage, u in items:
        lines.append(
            f"| {MARKER_NAMES[f.marker]} {md_code(f.label)} | {md_text(stage)} |"
            f" {md_code(u.name)} | {md_text(u.why)} | {u.calls:,} | {_ms(u.real_us)} |"
        )
    lines += [
        f"\n{MARKER_NAMES[f.marker]} {md_code(f.label)}: and {f.coverage.more_uncovered} more"
        for f in known
        if f.coverage.more_uncovered
    ]
    return lines


def _fidelity_markdown(view: PageView) -> list[str]:
    """The Replay fidelity section in Markdown: per file how many timed cards replay more than
    10 % away from the program, and those (at most 20, largest difference first)."""
    lines = ["", "### Replay fidelity", ""]
    for f in view.files:
        lines.append(
            f"- {MARKER_NAMES[f.marker]} {md_code(f.label)}: {md_text(f.coverage.fidelity_line)}"
        )
    rows = [(f, r) for f in view.files for r in f.coverage.fidelity]
    if rows:
        lines += [
            "",
            "| file | shape | calls | program us per call | replayed us per call | ratio |"
            " likely cause |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
    for f, r in rows:
        lines.append(
            f"| {MARKER_NAMES[f.marker]} {md_code(f.label)} | {md_code(r.group)} | {r.calls} |"
            f" {r.real_us:,.1f} | {r.replayed_us:,.1f} | {r.ratio:.3f} | {md_text(r.note or '')} |"
        )
    lines += [
        f"\n{MARKER_NAMES[f.marker]} {md_code(f.label)}: and {f.coverage.more_fidelity} more"
        for f in view.files
        if f.coverage.more_fidelity
    ]
    return lines


def _stability_markdown(files: list[tuple[str, CardFile]]) -> list[str]:
    """Per file measured with --repeat: how many verdicts are stable, and the unstable ones;
    per file with light cards: what the light list left unchecked."""
    lines: list[str] = []
    for label, cards in files:
        found = stability_lines(cards)
        if found:
            lines += ["", f"### Verdicts over repeats: {md_code(label)}", ""]
            lines += [f"- {md_text(line)}" for line in found]
        light = light_lines(cards)
        if light:
            lines += ["", f"### Captured light: {md_code(label)}", ""]
            lines += [f"- {md_text(line)}" for line in light]
    return lines


def _inference_us(card: Any) -> float | None:
    return None if card.summed_kernel_us is None else card.summed_kernel_us * card.calls


def _class_text(card: Any) -> str:
    """A card's class for the Markdown table: its primary, and the class a drill-down settled."""
    text = card.primary or card.status
    text = f"{text} (settled: {card.settled.primary})" if card.settled else text
    stability = card.measurement.stability if card.measurement else None
    if stability is not None and stability.verdict == "unstable":
        text += f" (unstable: may be {stability.flips_to})"
    return text


def _top_rows(view: PageView) -> list[str]:
    rows = []
    for f in view.files:
        cards = [c for c in view.cards if c.file == f.index]
        cards.sort(key=lambda c: -((c.card.summed_kernel_us or 0.0) * c.card.calls))
        for c in cards[:TOP_CONSUMERS]:
            roof = c.dominant.roofline if c.dominant else None
            units = c.dominant.hot_units.get("sm") if c.dominant else None
            hot = f"{units[0].label} {units[0].pct:.1f} %" if units else "-"
            rows.append(
                f"| {MARKER_NAMES[f.marker]} {md_code(f.label)} | {md_code(c.card.group)} |"
                f" {md_text(_class_text(c.card))} | {c.card.calls} |"
                f" {figure(c.card.summed_kernel_us, '{:,.1f}')} |"
                f" {figure(_inference_us(c.card), '{:,.1f}')} |"
                f" {figure(c.share_of_stage, '{:.1%}')} |"
                f" {figure(roof.pct_of_roof if roof else None, '{:.1f}')} |"
                f" {md_text(roof.binding or '-') if roof else '-'} | {md_text(hot)} |"
            )
    return rows
