"""Off a terminal (a pipe, `-o -`, `-o F.txt`) `next` draws its tables at the width they need:
ids whole, one line per row, no trailing spaces; on a terminal free-text lines after the tables
(summary's coverage lines, next's notes, diff's header and warnings) wrap between words to its
width, never past it (the terminal's own wrap cuts a figure in two). Real fixtures: the 480x832
workload and the 14B recording's every-op cards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import RECORD, ROOT, derived_path, run_cli
from on_tty import on_terminal

from ncu_classify.cards.files import load_card_file
from ncu_classify.cli.terminal import summary_table_text
from ncu_classify.present.next_moves import next_moves
from ncu_classify.present.next_text import coverage_lines, stage_notes
from ncu_classify.present.summary import summary_notes

W480 = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
EVERY_OP = RECORD / "cards_wan14b_every_op_480x832.json"  # derived_path: the session's
LONG = "attention:flash_attn_v2:" + "x" * 130 + ":bf16"  # an id of 159 characters


def _long_id_cards(tmp_path: Path) -> Path:
    """The 480x832 cards with the first attention card's group 159 characters long."""
    data = json.loads(W480.read_text())
    card = next(c for c in data["cards"] if c["stage"] == "attention")
    card["group"] = LONG
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(data))
    return path


def _piped(*args: str) -> str:
    done = run_cli(*args, env={"COLUMNS": "80"})
    assert done.rc == 0, done.stderr
    return done.stdout


def _rows(text: str, ids: list[str]) -> None:
    """Each id whole on a line of its own row; no line ends with a space."""
    lines = text.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    for group in ids:
        assert [line for line in lines if group in line], group


@pytest.mark.parametrize("how", ["pipe", "-", "txt"])
def test_next_off_a_terminal_draws_ids_whole(tmp_path: Path, how: str) -> None:
    path = _long_id_cards(tmp_path)
    if how == "pipe":
        text = _piped("next", str(path))
    elif how == "-":
        text = _piped("next", str(path), "-o", "-")
    else:
        _piped("next", str(path), "-o", str(tmp_path / "x.txt"))
        text = (tmp_path / "x.txt").read_text()
    report = next_moves(load_card_file(path), "cards.json")
    top = [
        m.group for s in report.stages for m in [x for x in report.moves if x.stage == s.stage][:5]
    ]
    assert LONG in top
    _rows(text, top)
    # every note and the coverage line on one line of their own
    for note in [*stage_notes(report), *coverage_lines(report)]:
        assert note in text.splitlines()
    # the stage table: a row per stage, its cells on one line
    assert "attention         4   3,503.8          2,134.7" in text


def test_summary_lines_wrap_between_words_on_a_terminal(derived_cards: Path) -> None:
    code, text = on_terminal(["summary", str(derived_path(EVERY_OP, derived_cards))], 102)
    assert code == 0
    notes = summary_notes(load_card_file(derived_path(EVERY_OP, derived_cards)), "stage")
    assert notes and max(map(len, notes)) > 102  # the lines that must wrap
    lines = text.splitlines()
    assert max(map(len, lines)) <= 102
    tail = " ".join(lines[len(lines) - 2 * len(notes) :]).split()
    assert " ".join(" ".join(notes).split()) in " ".join(tail)
    assert "replayed 258.1 ms;" in " ".join(text.split())


def test_summary_lines_off_a_terminal_are_one_line_each(derived_cards: Path) -> None:
    cards = load_card_file(derived_path(EVERY_OP, derived_cards))
    lines = summary_table_text(cards, "stage").splitlines()
    for note in summary_notes(cards, "stage"):
        assert note in lines


def test_next_notes_wrap_on_a_terminal(tmp_path: Path) -> None:
    path = _long_id_cards(tmp_path)
    code, text = on_terminal(["next", str(path)], 70)
    assert code == 0
    assert max(map(len, text.splitlines())) <= 70
    report = next_moves(load_card_file(path), "cards.json")
    words = " ".join(text.split())
    for note in stage_notes(report):
        assert note in words


def test_diff_header_lines_wrap_on_a_terminal() -> None:
    cards = ROOT / "reports" / "diff" / "cards"
    args = ["diff", str(cards / "w480_gpu0.json"), str(cards / "w480_gpu1.json")]
    code, text = on_terminal(args, 60)
    assert code in (0, 1)
    head = text.split("per shape")[0].splitlines()  # the lines above the tables
    assert len(head) > 2 and max(map(len, head)) <= 60
    assert "132 SMs, SM clock 1.5625-1.972 GHz" in " ".join(" ".join(head).split())


def test_a_line_wraps_between_words_on_a_terminal_only() -> None:
    import io

    from rich.console import Console

    from ncu_classify.present.fit import Line

    text = "coverage dit: 100.0 % of 258.8 ms; replayed 258.1 ms; " + "x" * 50 + " end"
    for terminal, width in ((True, 30), (False, 30)):
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, force_terminal=terminal, soft_wrap=True)
        console.print(Line(text))
        lines = buffer.getvalue().splitlines()
        if terminal:  # every word whole but the one wider than the terminal, which folds
            assert max(map(len, lines)) <= width
            assert "258.1" in [w for line in lines for w in line.split()]
            assert "".join(lines).replace(" ", "") == text.replace(" ", "")
        else:
            assert lines == [text]
