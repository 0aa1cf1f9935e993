"""A stage, class or row whose every card is untimed (failed, or without a total) has unknown
time: null in JSON, `unknown` in tables, never 0.0; a row with some timed cards keeps their sum
and says how many are untimed; a class with no card on a side that has the stage is 0 us.
Real fixtures: the 480x832 workload with its two output cards made failed (as a crash leaves
them), and the committed smoke cards (one failed attention card)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ROOT

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.rollup import by_kernel_class, by_stage
from ncu_classify.cli.entry import run
from ncu_classify.present.next_moves import next_moves
from ncu_classify.present.next_table import next_table_text
from ncu_classify.present.next_text import next_markdown
from ncu_classify.present.summary import summarize, summary_csv

W480 = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
SMOKE = ROOT / "reports" / "smoke_h200_cards.json"


def _output_failed(tmp_path: Path) -> Path:
    """The 480x832 cards with both output cards failed: no kernel, no total, no class."""
    data = json.loads(W480.read_text())
    for card in data["cards"]:
        if card["stage"] == "output":
            card.update(status="failed", primary=None, summed_kernel_us=None, error="crashed")
            card["kernels"] = []
    path = tmp_path / "outfail.json"
    path.write_text(json.dumps(data))
    return path


def test_next_says_unknown_for_a_stage_of_untimed_cards(tmp_path: Path) -> None:
    report = next_moves(load_card_file(_output_failed(tmp_path)), "outfail.json")
    output = next(s for s in report.stages if s.stage == "output")
    assert (output.cards, output.cards_without_figures, output.measured_us) == (2, 2, None)
    # the overall row keeps the timed cards' sum: 10,417.2 - 69.1 of the output cards
    assert report.overall.measured_us == 10348.16
    assert json.loads(report.model_dump_json())["stages"][3]["measured_us"] is None
    rows = [line.split() for line in next_table_text(report).splitlines()]
    assert ["output", "2", "(2", "untimed)", *["unknown"] * 5] in rows
    overall = next(r for r in rows if r[:2] == ["(all", "stages)"])
    assert overall[:6] == ["(all", "stages)", "34", "(2", "untimed)", "10,348.2"]
    assert "| output | 2 (2 untimed) | unknown | unknown | unknown | unknown | unknown |" in (
        next_markdown(report)
    )


def test_summary_says_unknown_for_a_class_of_untimed_cards(capsys) -> None:  # type: ignore[no-untyped-def]
    cards = load_card_file(SMOKE)
    failed = [r for r in by_stage(cards.cards) if r.primary == "failed"]
    assert [(r.stage, r.cards, r.kernel_us, r.share_of_stage, r.untimed) for r in failed] == [
        ("attention", 1, None, None, 1)
    ]
    kernels = [r for r in by_kernel_class(cards.cards) if r.kernel_class == "failed"]
    assert [(r.kernels, r.kernel_us, r.share_of_stage, r.untimed) for r in kernels] == [
        (0, None, None, 1)
    ]
    assert "attention,failed,1,1,,,1" in summary_csv(summarize(cards, "stage")).splitlines()
    assert run(["summary", str(SMOKE)]) == 0
    shown = [line.strip("│ ").split() for line in capsys.readouterr().out.splitlines()]
    assert ["failed", "│", "1", "│", "unknown", "│", "-", "│", "1"] in shown


def test_diff_says_unknown_where_a_side_has_the_stage_untimed(tmp_path: Path) -> None:
    out = tmp_path / "diff.json"
    failed = _output_failed(tmp_path)
    assert run(["diff", str(W480), str(failed), "--format", "json", "-o", str(out)]) == 0
    diff = json.loads(out.read_text())
    rows = {r["primary"]: r for r in diff["rollup"] if r["stage"] == "output"}
    assert rows["failed"] == {
        "stage": "output",
        "primary": "failed",
        "baseline_cards": 0,
        "candidate_cards": 2,
        "baseline_us": 0.0,
        "candidate_us": None,
        "baseline_untimed": 0,
        "candidate_untimed": 2,
        "delta_us": None,
    }
    # a class the candidate's output stage has no card of: 0 us there
    assert rows["unresolved_no_dominant_limiter"]["candidate_us"] == 0.0
    [headroom] = [h for h in diff["headroom"] if h["stage"] == "output"]
    assert headroom["candidate"]["measured_us"] is None
    text = tmp_path / "diff.md"
    assert run(["diff", str(W480), str(failed), "--format", "md", "-o", str(text)]) == 0
    markdown = text.read_text()
    assert "| output | failed | 0 -\\> 2 | 0.0 | unknown | unknown |" in markdown
    assert "| output | 69.1 -> unknown | 42.9 -> unknown | 42.9 -> unknown | - | - |" in markdown


def test_the_report_says_unknown_for_a_stage_of_untimed_cards(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    failed = _output_failed(tmp_path)
    assert run(["report", str(failed), "-o", str(page), "--format", "md"]) == 0
    lines = page.read_text().splitlines()
    assert "| ● `outfail.json` | output | failed | 2 | 2 | unknown (2 without time) | - |" in lines
    assert "| output | 2 (2 untimed) | unknown | unknown | unknown | unknown | unknown |" in lines
    html = tmp_path / "page.html"
    assert run(["report", str(failed), "-o", str(html)]) == 0
    assert '<td class="num">unknown <span class="warn">(2 without time)</span>' in html.read_text()
