"""cards and diffs as people and programs read them: summaries (summary), DataFrames (frames),
table formats and bytes (tables), the diff as text (diff_text), the report page (page_view,
page_chart, page) and the published JSON Schemas (schema). Writes no file itself.
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "cards_frame",
    "cards_schema_text",
    "load_cards",
    "report_html",
    "report_markdown",
    "summarize",
]
__getattr__ = lazy_face(
    __name__,
    {
        "cards_frame": "frames",
        "cards_schema_text": "schema",
        "load_cards": "frames",
        "report_html": "page",
        "report_markdown": "page",
        "summarize": "summary",
    },
)
