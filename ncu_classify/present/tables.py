"""Tables as files: which format an output is written in (`--format` as given, else the `-o`
suffix, else the command's default: one policy for every command, so that `-o x.pdf` never
silently gets HTML and `--format csv -o x.parquet` never gets CSV bytes under a Parquet name),
and the bytes of a CSV or Parquet table (cells made safe for spreadsheets). pandas is imported
only when a DataFrame is written, so the CLI starts without it."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..core.errors import EnvironmentProblem, UsageError
from ..core.text import printable

if TYPE_CHECKING:
    import pandas as pd

TABLE_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
TEXT_SUFFIXES = (".txt", ".text", ".log", ".out")  # a text table may go into any of these
DIFF_SUFFIXES = {".md": "md", ".json": "json", **TABLE_SUFFIXES}  # `diff -o`
PAGE_SUFFIXES = {".html": "html", ".htm": "html", ".md": "md"}  # `report -o`


def output_format(
    given: str | None,
    output: str | None,
    suffixes: Mapping[str, str],
    default: str | None,
    *,
    option: str = "-o",
    neutral: tuple[str, ...] = (),
    has_format: bool = True,
) -> str:
    """The format to write `output` in. A --format the command lacks, a suffix that names
    another format than --format, and an unknown suffix without --format are usage errors;
    a `neutral` suffix (.txt for a text table) names no format."""
    formats = [*dict.fromkeys([*([default] if default else []), *suffixes.values()])]
    if given is not None and given not in formats:
        raise UsageError(f"--format {given!r}: expected {', '.join(formats)}")
    suffix = Path(output).suffix.lower() if output and output != "-" else ""
    implied = suffixes.get(suffix)
    if given is not None and implied is not None and given != implied:
        raise UsageError(f"--format {given} but {option} {output} names a {suffix} file")
    if default is None and implied is None:
        raise UsageError(f"{option} {output}: expected a file ending in {', '.join(suffixes)}")
    if suffix and suffix not in neutral and implied is None and given is None:
        known = ", ".join(suffixes) + (f"; a text table: {', '.join(neutral)}" if neutral else "")
        raise UsageError(
            f"{option} {output}: {suffix} is not a format this command writes ({known});"
            " rename the file" + (" or give --format" if has_format else "")
        )
    chosen = given or implied or default or ""
    if chosen == "parquet":
        require_parquet()
    return chosen


# What each of the tool's files is, by suffix: a file of one kind is never written under the
# name of another (cards JSON into x.csv, a shapes YAML into x.json).
KNOWN_SUFFIXES = {
    ".json": "JSON",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".csv": "CSV",
    ".parquet": "Parquet",
    ".pq": "Parquet",
    ".html": "HTML",
    ".htm": "HTML",
    ".md": "Markdown",
    ".pdf": "PDF",
    ".png": "PNG",
    ".svg": "SVG",
    ".xlsx": "Excel",
    ".xls": "Excel",
}


def check_kind(output: str, kind: str, option: str = "-o") -> None:
    """Refuse an `output` whose suffix names another of the tool's file kinds than `kind`
    (`classify -o cards.csv`); other suffixes and none are the user's choice."""
    suffix = Path(output).suffix.lower() if output != "-" else ""
    named = KNOWN_SUFFIXES.get(suffix)
    if named is not None and named != kind:
        raise UsageError(
            f"{option} {output}: this command writes {kind}, but {suffix} names {named};"
            " give another file name"
        )


def require_parquet() -> None:
    """Parquet needs pyarrow: say so before any work is done or anything is written."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise EnvironmentProblem(
            "Parquet needs pyarrow, which is not installed: pip install 'ncu-classify[parquet]'"
            " (or pyarrow); nothing was written"
        ) from None


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A CSV cell: None is empty, text is printable and cannot start a formula (a leading `'`
    is added, as spreadsheets show it); numbers and booleans are kept."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = printable(value)
        return "'" + text if text.startswith(_FORMULA_START) else text
    return value


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """CSV text (header first, `\\n` line ends) with every cell made safe by `csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def frame_bytes(frame: pd.DataFrame, fmt: Literal["csv", "parquet"]) -> bytes:
    """The DataFrame as CSV (missing = empty cell; text cells made safe as every CSV of the
    tool) or Parquet (needs pyarrow; values as they are)."""
    if fmt == "csv":
        return csv_text(list(frame.columns), _csv_rows(frame)).encode("utf-8")
    require_parquet()
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _csv_rows(frame: pd.DataFrame) -> list[list[object]]:
    """Rows with NaN/NA as None (an empty cell) and floats in their shortest repr."""
    rows = []
    for record in frame.itertuples(index=False):
        rows.append([None if _missing(v) else v for v in record])
    return rows


def _missing(value: object) -> bool:
    """None, NaN or pandas' NA (a missing number or flag)."""
    import pandas as pd

    return value is None or value is pd.NA or (isinstance(value, float) and value != value)
