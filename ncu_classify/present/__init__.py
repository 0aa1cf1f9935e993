"""cards and diffs as people and programs read them: summaries (summary), DataFrames (frames),
table formats and bytes (tables), the diff as text (diff_text), the `report` command's page
(page_view, page_chart, page) and the published JSON Schemas (schema). Writes no file itself.
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
    },
)
