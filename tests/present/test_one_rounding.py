"""One way to print a figure across `next`, `diff` and `summary` (real 480x832 workload cards):
a recoverable time is the shown measured minus the shown floor in both next and diff, huge
figures print alike, the next CSV names its per-inference columns so, a below-SOL gap that
shows as 0.0 is no note, and `next -o x.yaml` names every suffix it writes, .txt included."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ROOT

from ncu_classify.cards.files import load_card_file
from ncu_classify.cli.entry import run
from ncu_classify.compare.diff import DiffOptions, diff_cards
from ncu_classify.core.noise import load_noise
from ncu_classify.present.diff_headroom import headroom_rows
from ncu_classify.present.next_moves import next_moves
from ncu_classify.present.next_text import next_csv, stage_cells, stage_notes

W480 = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"


def test_next_and_diff_print_the_same_recoverable_figures() -> None:
    cards = load_card_file(W480)
    report = next_moves(cards, "w480")
    diff = diff_cards(cards, cards, ("a", "b"), DiffOptions(noise=load_noise()[0]))
    shown = {row[0]: row[1:4] for row in headroom_rows(diff)}
    for stage in report.stages:
        cells = stage_cells(stage)
        same = [f"{cells[i]} -> {cells[i]}" for i in (2, 4, 6)]
        assert shown[stage.stage] == same, stage.stage
    assert shown["dit"][1] == "182.4 -> 182.4"  # 1,335.9 - 1,153.5 as shown (was 182.3)
    assert shown["attention"][1:] == ["1,369.1 -> 1,369.1", "1,828.0 -> 1,828.0"]


def test_the_next_csv_says_per_inference_beside_per_call() -> None:
    header = next_csv(next_moves(load_card_file(W480), "w480")).splitlines()[0].split(",")
    assert header[8:14] == [
        "measured_us_per_inference", "kernel_roof_us_per_inference",
        "recoverable_at_kernel_roof_us_per_inference", "at_sol_us_per_inference",
        "recoverable_at_sol_us_per_inference", "sol_pct",
    ]  # fmt: skip
    assert "measured_us_per_call" in header and "measured_us" not in header


def test_a_huge_figure_prints_alike_in_next_and_summary(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(W480.read_text())
    card = next(c for c in data["cards"] if c["stage"] == "output")
    card["summed_kernel_us"] = 2.538e19
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    assert run(["next", str(path)]) == 0
    shown_next = capsys.readouterr().out
    assert run(["summary", str(path)]) == 0
    shown_summary = capsys.readouterr().out
    for text in (shown_next, shown_summary):
        assert "2.538e+19" in text and "25,380,000" not in text


def test_a_below_sol_gap_that_shows_as_0_0_is_no_note() -> None:
    report = next_moves(load_card_file(W480), "w480")
    assert [s.below_sol_us for s in report.stages] == [0.0, 0.33, 0.658, 2.616]
    assert sum("below their SOL" in line for line in stage_notes(report)) == 3
    tiny = [s.model_copy(update={"below_sol_us": 0.003}) for s in report.stages]
    lines = stage_notes(report.model_copy(update={"stages": tiny}))
    assert [line for line in lines if "below their SOL" in line] == []


def test_next_names_the_text_suffixes_it_writes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert run(["next", str(W480), "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert "(.json, .md, .csv; a text table: .txt, .text, .log, .out)" in err
