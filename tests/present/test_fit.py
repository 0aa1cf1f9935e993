"""Tables that never alter a figure (issue 37 item 4): on a terminal of 40 to 120 columns every
figure of every summary view, of the diff and of the metrics stays whole and every header reads
whole; a table too wide folds ids and free text first and, as a last resort, is drawn wider
than the terminal. Off a terminal (a file, a pipe, a CI log) a table is as wide as it needs:
ids whole, one line per row. On the real 14B recording (fixtures/record_h200_wan14b), the
committed diff cards and the 704x1280 workload."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from on_tty import column, headers, on_terminal, row_lines, tables
from rich.console import Console, RenderableType

from ncu_classify.cards.files import load_card_file, write_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.cli.terminal import metrics_table, progress_bar, summary_table
from ncu_classify.compare.diff import DiffOptions, diff_cards
from ncu_classify.core.metrics import metric_rows
from ncu_classify.core.noise import load_noise
from ncu_classify.present.diff_cut import shown_shapes
from ncu_classify.present.diff_text import diff_renderable, roof_text, time_text
from ncu_classify.present.summary import NUMERIC, rows_for_people, summary_cells

RECORDING = ROOT / "fixtures" / "record_h200_wan14b"
WORKLOAD = ROOT / "fixtures" / "workload_h200_704x1280" / "cards.json"
DIFF_CARDS = ROOT / "reports" / "diff" / "cards"
VIEWS = ("stage", "kernel", "shape", "coverage", "fidelity")
WIDTHS = (40, 60, 70, 80, 120)
FIGURE = re.compile(r"^(?:[+-]?x?[\d,]+(?:\.\d+)?%?\*?|-|->|%|missing)$")


def _drawn(renderable: RenderableType, width: int, terminal: bool = True) -> str:
    """What the CLI's console prints of `renderable` on a terminal of `width` columns (or, off
    a terminal, to a file whose console thinks it is `width` wide)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=terminal,
        color_system=None,
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    console.print(renderable)
    return buffer.getvalue()


def _expected(cards: CardFile, by: str) -> tuple[list[str], list[list[str]]]:
    """The column names and cells of a summary view for people."""
    return summary_cells(rows_for_people(cards, by), by, for_people=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("by", VIEWS)
def test_every_summary_figure_and_header_is_whole_on_a_terminal(
    wan: CardFile, by: str, width: int
) -> None:
    names, cells = _expected(wan, by)
    [table] = tables(_drawn(summary_table(wan, by), width))  # type: ignore[arg-type]
    shown = headers(table)
    figures = [n for n in names if n in NUMERIC]
    assert {n.replace("_", " ") for n in figures} & set(shown)
    for i, name in enumerate(names):
        header = name.replace("_", " ")
        if name in NUMERIC and header in shown:  # (a column that says nothing is left out)
            assert column(table, header) == [row[i] for row in cells if row[i]], (name, width)
    assert all(h in {n.replace("_", " ") for n in names} for h in shown)
    if width >= 80 and by != "shape":  # it fits: never wider than the terminal
        assert max(len(line) for line in table) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_class_names_fold_only_when_nothing_else_fits(wan: CardFile, width: int) -> None:
    text = _drawn(summary_table(wan, "stage"), width)
    [table] = tables(text)
    classes = {row.primary for row in rows_for_people(wan, "stage")}  # type: ignore[union-attr]
    whole = {c for c in classes if re.search(rf"│ {c} +│", text)}
    # the figures take 37 columns; at 70 and wider every class name fits whole
    assert whole == (classes if width >= 70 else whole)
    assert max(len(line) for line in table) <= max(width, 48)  # 48: the narrowest it can be


def test_off_a_terminal_ids_are_whole_one_line_per_row(wan: CardFile, tmp_path: Path) -> None:
    """`summary --by shape > f` was 10,105 lines for 253 cards (ids and kernel names wrapped
    in 80 columns); now one line per card, every id whole, as the CLI prints it to a pipe and
    to -o FILE.txt."""
    groups = [card.group for card in wan.cards]
    [table] = tables(_drawn(summary_table(wan, "shape"), 80, terminal=False))
    assert column(table, "group") == groups
    assert len(row_lines(table)) == len(wan.cards) == 253
    cards_file = tmp_path / "cards.json"
    write_card_file(cards_file, wan)
    assert run(["summary", str(cards_file), "--by", "shape", "-o", str(tmp_path / "s.txt")]) == 0
    text = (tmp_path / "s.txt").read_text()
    [written] = tables(text)
    assert column(written, "group") == groups
    assert column(written, "dominant kernel") == [c.dominant_kernel or "-" for c in wan.cards]
    # title, 3 borders, 1 header line, 253 rows, 3 coverage lines
    assert len(text.splitlines()) == 1 + 3 + 1 + 253 + 3


def test_the_cli_keeps_figures_whole_on_a_60_column_terminal() -> None:
    cards = load_card_file(WORKLOAD)
    for by in ("stage", "shape"):
        code, text = on_terminal(["summary", str(WORKLOAD), "--by", by], 60)
        assert code == 0
        [table] = tables(text)
        names, cells = _expected(cards, by)
        for i, name in enumerate(names):
            if name in NUMERIC and name.replace("_", " ") in headers(table):
                assert column(table, name.replace("_", " ")) == [r[i] for r in cells if r[i]]
        if by == "stage":
            assert max(len(line) for line in table) <= 60


def test_the_cli_draws_a_piped_table_at_the_width_it_needs(capsys: pytest.CaptureFixture) -> None:
    assert run(["summary", str(WORKLOAD), "--by", "shape"]) == 0
    [table] = tables(capsys.readouterr().out)
    assert column(table, "group") == [c.group for c in load_card_file(WORKLOAD).cards]


def test_a_ci_log_with_colour_is_no_terminal() -> None:
    """FORCE_COLOR (colour in a CI log) keeps the table at the width it needs in a pipe."""
    env = {"FORCE_COLOR": "1", "COLUMNS": "80"}
    done = run_cli("summary", WORKLOAD, "--by", "shape", env=env, timeout=300)
    [table] = tables(re.sub(r"\x1b\[[0-9;]*m", "", done.stdout))
    assert column(table, "group") == [c.group for c in load_card_file(WORKLOAD).cards]


@pytest.fixture(scope="module")
def tf32():  # type: ignore[no-untyped-def]
    """The committed fp32 DiT with TF32 off against on: 11 shapes, 4 flipped."""
    sides = [load_card_file(DIFF_CARDS / f"{n}.json") for n in ("dit_fp32_tf32", "dit_fp32_notf32")]
    return diff_cards(*sides, ("tf32", "notf32"), DiffOptions(noise=load_noise()[0]))


@pytest.mark.parametrize("width", WIDTHS)
def test_every_diff_figure_is_whole_on_a_terminal(tf32, width: int) -> None:  # type: ignore[no-untyped-def]
    shapes, rollup, headroom = tables(_drawn(diff_renderable(tf32), width))
    listed = shown_shapes(tf32)[0]
    deciding = ["deciding"] if any(s.crossings for s in listed) else []  # else left out
    assert headers(shapes) == ["shape", "change", "class", "time", "% of roof", *deciding]
    # a figure column wraps between words only: its words, line by line, are the figures'
    assert " ".join(column(shapes, "time")).split() == " ".join(map(time_text, listed)).split()
    roofs = " ".join(column(shapes, "% of roof")).split()
    assert roofs == " ".join(roof_text(s) for s in listed).split()
    for table in (rollup, headroom):
        for header in headers(table)[1:]:
            words = " ".join(column(table, header)).split()
            assert words and all(FIGURE.match(w) for w in words), (header, words)


def test_a_diff_off_a_terminal_is_one_line_per_shape(tf32) -> None:  # type: ignore[no-untyped-def]
    shapes = tables(_drawn(diff_renderable(tf32), 80, terminal=False))[0]
    listed = shown_shapes(tf32)[0]
    assert len(row_lines(shapes)) == len(listed) + 1  # and the stage's row
    assert column(shapes, "shape")[1:] == [s.candidate.group for s in listed]


@pytest.mark.parametrize("width", (60, 80, 120))
def test_metric_keys_are_whole_where_they_fit(width: int) -> None:
    [table] = tables(_drawn(metrics_table(metric_rows()), width))
    assert headers(table) == ["key", "unit", "ncu names", "description"]
    keys = [row[0] for row in metric_rows()]
    if width >= 80:  # the ncu names and descriptions fold first
        assert column(table, "key") == keys
    assert "".join(column(table, "key")) == "".join(keys)
    assert max(len(line) for line in table) <= width


@pytest.mark.parametrize("width", (30, 40, 60, 80))
def test_progress_counts_are_whole_and_a_long_id_is_marked_cut(width: int) -> None:
    """capture's bar put the shape first: at 40 columns `1234/25300` was `12…`, at 60 gone."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    bar = progress_bar(console, "{task.description}")
    task = bar.add_task("capture", total=None)
    group = "dit:conv3d:in1x16x3x60x104_w5120x16x1x2x2_s1x2x2_p0x0x0:bf16:bias"
    bar.update(task, completed=1234, total=25300, description=f"ok     {group}")
    console.print(bar.make_tasks_table(bar.tasks))
    [line] = buffer.getvalue().splitlines()
    assert line.split()[0] == "1234/25300" and len(line) <= width
    assert line.endswith("…") and group not in line
