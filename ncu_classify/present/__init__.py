"""Cards and diffs as people and programs read them. Writes no file itself.

summary        per stage, per kernel class, per shape, coverage, fidelity
coverage       the coverage lines and rows every view shows
frames         cards as pandas DataFrames
tables         table formats (--format, -o suffix) and CSV/Parquet bytes
fit            tables that never alter a figure (column widths, stacked rows)
diff_text      a diff as a terminal table, Markdown, CSV, JSON
diff_cut       which shapes a terminal diff lists
diff_rollup    the per-stage-and-class roll-up of a diff
diff_headroom  the headroom part of a diff
next_moves     headroom ranked: where the time is, the next moves
advice         what to try for a card, typed: kind, sentence, why; never what the kernel is
advice_facts   what a card says its dominant kernel already is (family, backend, grid, ...)
next_table     `next` on a terminal
next_text      `next` as Markdown and CSV
next_measured  what `try` measured, as `next --tries` shows it: alternatives, winners, totals
page_view      what a page shows, computed once for HTML and Markdown
page_chart     the roofline chart as SVG geometry
page           `ncu-classify report`: the HTML page or the Markdown summary
schema         the published JSON Schemas
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "cards_frame",
    "cards_schema_text",
    "load_cards",
    "page_html",
    "page_markdown",
    "summarize",
    "tries_frame",
]
__getattr__ = lazy_face(
    __name__,
    {
        "cards_frame": "frames",
        "cards_schema_text": "schema",
        "load_cards": "frames",
        "page_html": "page",
        "page_markdown": "page",
        "summarize": "summary",
        "tries_frame": "frames",
    },
)
