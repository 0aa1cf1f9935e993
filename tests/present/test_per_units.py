"""Every time column says what it is per (issue 37 item 5): `summary --by shape`'s `kernel us`
was per call where `--by stage`'s is per inference, with no calls column. Now per call or per
inference in every name: the terminal tables, CSV, Parquet, the DataFrames, the HTML and
Markdown report, the diff's CSV; on the real 14B recording (fixtures/record_h200_wan14b), whose
shapes run up to 241 times per inference."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT
from on_tty import headers, tables
from rich.console import Console

from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.cli.terminal import summary_table
from ncu_classify.present.diff_text import CSV_COLUMNS
from ncu_classify.present.frames import cards_frame
from ncu_classify.present.page import page_html, page_markdown
from ncu_classify.present.summary import summarize, summary_csv

RECORDING = ROOT / "fixtures" / "record_h200_wan14b"
HEADERS = {
    "stage": "stage,primary,cards,calls,kernel_us_per_inference,share_of_stage,untimed",
    "kernel": "stage,kernel_class,kernels,kernel_us_per_inference,share_of_stage,untimed",
    "shape": "stage,group,primary,status,calls,kernel_us_per_call,kernel_us_per_inference,"
    "dominant_kernel,problem,stability",
    "coverage": "stage,item,why,basis,coverage_pct,calls,covered_calls,real_us_per_inference,"
    "covered_real_us_per_inference,replayed_us_per_inference,light_shapes,"
    "light_real_us_per_inference",
    "fidelity": "group,stage,calls,real_us_per_call,replayed_us_per_call,ratio,"
    "difference_us_per_inference,note",
}
TIME = re.compile(r"(^|[ _])(us|ms)($|[ _])")  # a name or header that holds a time


def _says_per(name: str) -> bool:
    """A time column's name or header says per call or per inference."""
    return bool(re.search(r"(^|[ _])per[ _](call|inference)$", name))


@pytest.mark.parametrize("by", list(HEADERS))
def test_csv_and_parquet_names_say_per_call_or_per_inference(
    wan_file: Path, by: str, tmp_path: Path
) -> None:
    csv = tmp_path / "v.csv"
    assert run(["summary", str(wan_file), "--by", by, "-o", str(csv)]) == 0
    names = csv.read_text().splitlines()[0]
    assert names == HEADERS[by]
    parquet = tmp_path / "v.parquet"
    assert run(["summary", str(wan_file), "--by", by, "-o", str(parquet)]) == 0
    assert ",".join(pd.read_parquet(parquet).columns) == HEADERS[by]
    assert all(_says_per(n) for n in names.split(",") if TIME.search(n))


def test_per_shape_times_add_up_to_the_per_stage_ones(wan: CardFile) -> None:
    """The shape view's time per inference (per call x calls) sums to the stage view's."""
    shapes = summarize(wan, "shape")
    assert max(r.calls for r in shapes) == 241
    sums: dict[tuple[str, str], float] = {}
    for r in shapes:
        assert r.kernel_us_per_call is not None and r.kernel_us_per_inference is not None
        assert r.kernel_us_per_inference == round(r.kernel_us_per_call * r.calls, 3)
        key = (r.stage, r.primary)
        sums[key] = sums.get(key, 0.0) + r.kernel_us_per_inference
    for row in summarize(wan, "stage"):
        assert math.isclose(sums[(row.stage, row.primary)], row.kernel_us, abs_tol=0.01)
    big = next(r for r in shapes if r.calls == 241)
    line = next(x for x in summary_csv(shapes, "shape").splitlines() if f",{big.group}," in x)
    assert f",241,{big.kernel_us_per_call},{big.kernel_us_per_inference}," in line


@pytest.mark.parametrize("by", list(HEADERS))
def test_terminal_headers_say_per_call_or_per_inference(wan: CardFile, by: str) -> None:
    buffer = io.StringIO()
    Console(file=buffer, width=250, color_system=None, soft_wrap=True).print(
        summary_table(wan, by)  # type: ignore[arg-type]
    )
    [table] = tables(buffer.getvalue())
    shown = headers(table)
    timed = [h for h in shown if TIME.search(h)]
    assert timed and all(_says_per(h) for h in timed), shown
    if by == "shape":  # calls beside the time per call (they differ: up to 241)
        assert {"calls", "kernel us per call", "kernel us per inference"} <= set(shown)


def test_a_shape_table_whose_calls_are_all_1_shows_the_time_per_call_only(
    smoke_cards: CardFile,
) -> None:
    buffer = io.StringIO()
    Console(file=buffer, width=250, color_system=None).print(summary_table(smoke_cards, "shape"))
    [table] = tables(buffer.getvalue())
    shown = headers(table)
    assert "kernel us per call" in shown and "calls" not in shown
    assert "kernel us per inference" not in shown


def test_dataframes_name_what_their_times_are_per(wan: CardFile) -> None:
    cards = cards_frame(wan)
    timed = [c for c in cards.columns if TIME.search(c)]
    assert timed == ["summed_kernel_us_per_call", "real_us_per_call", "dur_us"]  # one launch
    assert "calls" in cards.columns
    coverage = cards_frame(wan, "coverage")
    assert [c for c in coverage.columns if TIME.search(c)] == [
        "real_us_per_inference",
        "covered_real_us_per_inference",
        "replayed_us_per_inference",
        "light_real_us_per_inference",
    ]


def test_report_headers_say_per_call_or_per_inference(wan: CardFile) -> None:
    page = page_html([("wan.json", wan)], title="wan")
    heads = {re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", page)}
    timed = sorted(h for h in heads if TIME.search(h))
    assert timed == [
        "difference us per inference",
        "headroom us per inference",
        "kernel us per inference",
        "program ms per inference",
        "program us per call",
        "replayed ms per inference",
        "replayed us per call",
        "us per call",
        "us per inference",
    ]
    text = page_markdown([("wan.json", wan)], title="wan")
    rows = [line for line in text.splitlines() if line.startswith("| file |")]
    cells = {c.strip() for line in rows for c in line.split("|")}
    assert {c for c in cells if TIME.search(c)} == {
        "program ms per inference",
        "replayed ms per inference",
        "program us per call",
        "replayed us per call",
        "kernel us per inference",
        "us per call",
        "us per inference",
    }


def test_the_diff_csv_says_its_times_are_per_call() -> None:
    timed = [c for c in CSV_COLUMNS if TIME.search(c)]
    assert timed == [
        "baseline_summed_kernel_us_per_call",
        "baseline_dominant_us_per_call",
        "candidate_summed_kernel_us_per_call",
        "candidate_dominant_us_per_call",
    ]
