"""Coverage and replay fidelity in every view (summary lines and tables, CSV/Parquet, the
DataFrames, the HTML and Markdown reports), on the real H200 recording of the Wan 2.1 14B DiT
step + VAE decode at 480x832 (fixtures/record_h200_wan14b), and the sentence every view says for
cards that were not made from a recorded program (the smoke capture)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT

import ncu_classify
from ncu_classify.cards.coverage import StageCoverage, UncoveredWork
from ncu_classify.cards.fidelity import slow_or_fast
from ncu_classify.cards.files import load_card_file, write_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.present.coverage import (
    coverage_lines,
    fidelity_line,
    fidelity_rows,
    stage_line,
)
from ncu_classify.present.frames import cards_frame
from ncu_classify.present.page import page_html, page_markdown
from ncu_classify.present.summary import summarize, summary_csv
from ncu_classify.verdicts.rules import LoadedRules

RECORDING = ROOT / "fixtures" / "record_h200_wan14b"
UNKNOWN = (
    "coverage: unknown: these cards were not made from a recorded program (ncu-classify record)"
)
KERNEL_TIME = "of the program's kernel time (torch.profiler at record)"
WAN_LINES = [
    f"coverage dit: 100.0 % of 258.8 ms {KERNEL_TIME}; replayed 258.1 ms; not covered: nothing",
    f"coverage output: 100.0 % of 0.189 ms {KERNEL_TIME}; replayed 0.187 ms; not covered:"
    " (kernels outside any ATen op) 0 ms (1 call)",
    f"coverage vae: 100.0 % of 310.2 ms {KERNEL_TIME}; replayed 306.6 ms; not covered: nothing",
]
OUTSIDE = "(kernels outside any ATen op)"
OUTSIDE_WHY = "launched inside a torch call but outside any ATen op (an extension's kernel)"
NORM = "vae:aten.linalg_vector_norm.default:1x384x1x60x104:fp32"
NORM_NOTE = (
    "its 9.2 MiB fit in L2: the program may find them warm, ncu flushes caches before each"
    " replay pass"
)
VIEWS = ("stage", "kernel", "shape", "coverage", "fidelity")


def test_coverage_rows_of_the_wan_recording(wan: CardFile) -> None:
    assert summary_csv(summarize(wan, "coverage"), "coverage").splitlines() == [
        "stage,item,why,basis,coverage_pct,calls,covered_calls,real_us_per_inference,"
        "covered_real_us_per_inference,replayed_us_per_inference,light_shapes,"
        "light_real_us_per_inference",
        "dit,(stage),,kernel_time,100.0,2433,2433,258807.187,258807.187,258146.976,0,",
        "output,(stage),,kernel_time,100.0,12,11,188.606,188.606,186.688,0,",
        f"output,{OUTSIDE},{OUTSIDE_WHY},kernel_time,,1,,0.0,,,,",
        "vae,(stage),,kernel_time,100.0,1008,1008,310199.936,310199.936,306613.696,0,",
    ]
    assert [(s.stage, s.real_us, s.replayed_us) for s in wan.coverage] == [
        ("dit", 258807.187, 258146.976),
        ("output", 188.606, 186.688),
        ("vae", 310199.936, 306613.696),
    ]


def test_summary_lines_say_the_share_of_the_program_per_stage(wan: CardFile) -> None:
    assert coverage_lines(wan) == WAN_LINES


def test_a_stage_recorded_without_a_gpu_is_counted_by_calls() -> None:
    stage = StageCoverage(
        stage="vae",
        basis="calls",
        coverage_pct=97.5,
        real_us=None,
        covered_real_us=None,
        replayed_us=1234.5,
        calls=1200,
        covered_calls=1170,
        uncovered=[
            UncoveredWork(name=f"aten.op{i}", why="not replayable", calls=10 - i, real_us=None)
            for i in range(5)
        ],
    )
    assert stage_line(stage) == (
        "coverage vae: 97.5 % of 1,200 device-op calls (recorded without a GPU: by calls);"
        " replayed 1.23 ms; not covered: aten.op0 (10 calls), aten.op1 (9 calls),"
        " aten.op2 (8 calls), and 2 more"
    )


def test_cards_without_coverage_say_it_is_unknown(smoke_cards: CardFile) -> None:
    assert coverage_lines(smoke_cards) == [UNKNOWN]
    assert summary_csv(summarize(smoke_cards, "coverage"), "coverage").splitlines()[1:] == [
        ",(coverage unknown),these cards were not made from a recorded program"
        " (ncu-classify record),,,,,,,,,"
    ]
    assert fidelity_line(smoke_cards).startswith("fidelity: unknown: no card carries")
    assert summarize(smoke_cards, "fidelity") == []


def test_stages_of_cards_from_no_recording_are_named_unknown(
    wan: CardFile, smoke_cards: CardFile
) -> None:
    both = wan.model_copy(update={"cards": [*wan.cards, *smoke_cards.cards]})
    assert coverage_lines(both) == [
        *WAN_LINES,
        "coverage attention: unknown: its cards were not made from a recorded program"
        " (ncu-classify record)",
    ]
    rows = summarize(both, "coverage")
    assert [(r.stage, r.item) for r in rows][-1] == ("attention", "(coverage unknown)")


def test_fidelity_rows_by_impact(wan: CardFile) -> None:
    every = fidelity_rows(wan)
    off = fidelity_rows(wan, off_only=True)
    assert (len(every), len(off)) == (253, 79)
    assert [r.group for r in off] == [f.group for f in slow_or_fast(wan.cards)]
    top = off[0]
    assert (top.group, top.stage, top.calls) == (NORM, "vae", 30)
    assert (top.real_us, top.replayed_us, top.ratio, top.difference_us) == (
        10.2868,
        16.672,
        1.6207,
        191.556,
    )
    assert top.note == NORM_NOTE
    [card] = [c for c in wan.cards if c.group == NORM]
    assert (card.real_us, card.summed_kernel_us, card.calls) == (10.2868, 16.672, 30)
    assert every[0].group == "dit:linear:M4680_N5120_K5120:bf16:bias"  # within 10 %, largest
    assert (every[0].difference_us, every[0].note) == (1124.424, None)
    assert fidelity_line(wan) == (
        "fidelity: 79 of 253 timed cards replay more than 10 % away from the program's own"
        " time per call; the largest difference per inference first"
    )


def test_fidelity_csv_lists_every_timed_card(wan: CardFile) -> None:
    lines = summary_csv(summarize(wan, "fidelity"), "fidelity").splitlines()
    assert len(lines) == 254
    assert lines[0] == (
        "group,stage,calls,real_us_per_call,replayed_us_per_call,ratio,"
        "difference_us_per_inference,note"
    )
    assert (
        lines[1]
        == "dit:linear:M4680_N5120_K5120:bf16:bias,dit,240,298.2269,302.912,1.0157,1124.424,"
    )
    assert lines[2].endswith(",12,6900.5238,6833.696,0.9903,-801.934,")  # a number, not '-...


@pytest.mark.parametrize("view", VIEWS)
def test_every_text_summary_ends_with_the_coverage(
    view: str, wan_file: Path, smoke_cards: CardFile, tmp_path: Path
) -> None:
    text = tmp_path / "summary.txt"
    assert run(["summary", str(wan_file), "--by", view, "-o", str(text)]) == 0
    lines = text.read_text().splitlines()
    assert lines[-3:] == WAN_LINES
    if view == "fidelity":
        assert lines[-4] == fidelity_line(load(wan_file))
        assert NORM in text.read_text()
    smoke = tmp_path / "smoke.json"
    write_card_file(smoke, smoke_cards)
    assert run(["summary", str(smoke), "--by", view, "-o", str(text)]) == 0
    assert text.read_text().splitlines()[-1] == UNKNOWN


def load(path: Path) -> CardFile:
    """A cards file read back."""
    return load_card_file(path)


def test_coverage_table_as_csv_and_parquet_and_frame(wan_file: Path, tmp_path: Path) -> None:
    frame = ncu_classify.load_cards(wan_file, level="coverage")
    assert frame["item"].tolist() == ["(stage)", "(stage)", OUTSIDE, "(stage)"]
    assert frame["real_us_per_inference"].tolist() == [258807.187, 188.606, 0.0, 310199.936]
    assert frame["covered_calls"].isna().tolist() == [False, False, True, False]
    assert str(frame["calls"].dtype) == "Int64" and math.isnan(frame["coverage_pct"][2])
    parquet = tmp_path / "coverage.parquet"
    assert run(["summary", str(wan_file), "--by", "coverage", "-o", str(parquet)]) == 0
    back = pd.read_parquet(parquet)
    assert back["item"].tolist() == frame["item"].tolist()
    assert back["replayed_us_per_inference"].tolist()[:2] == [258146.976, 186.688]
    csv = tmp_path / "coverage.csv"
    assert run(["summary", str(wan_file), "--by", "coverage", "-o", str(csv)]) == 0
    assert csv.read_text() == summary_csv(summarize(load(wan_file), "coverage"), "coverage")


def test_card_frame_carries_the_program_time_and_fidelity(
    wan_file: Path, smoke_cards: CardFile
) -> None:
    cards = ncu_classify.load_cards(wan_file).set_index("group")
    row = cards.loc[NORM]
    figures = (row["real_us_per_call"], row["real_kernels"], row["fidelity_ratio"])
    assert figures == (10.2868, 1.0, 1.6207)
    assert cards["real_us_per_call"].notna().all() and len(cards) == 253
    smoke = cards_frame(smoke_cards)
    assert smoke[["real_us_per_call", "real_kernels", "fidelity_ratio"]].isna().all().all()


def test_html_report_has_coverage_and_fidelity_sections(
    wan: CardFile, smoke_cards: CardFile
) -> None:
    page = page_html([("wan.json", wan), ("smoke.json", smoke_cards)], "t")
    assert page.index("<h2>Inputs</h2>") < page.index("<h2>Coverage</h2>")
    assert page.index("<h2>Replay fidelity</h2>") < page.index("<h2>Time per stage and class")
    assert (
        '<tr><td>dit</td><td>kernel time (torch.profiler at record)</td><td class="num">258.8'
        '</td><td class="num">100.0 %</td><td class="num">258.1</td><td class="num">2,433</td>'
        '<td class="num">2,433</td></tr>'
    ) in page
    assert (
        f'<tr><td>output</td><td class="kernel">{OUTSIDE}</td><td>'
        f"{OUTSIDE_WHY.replace(chr(39), '&#39;')}</td>"
        '<td class="num">1</td><td class="num">0</td></tr>'
    ) in page
    assert (
        f'<tr><td class="kernel">{NORM}</td><td>vae</td><td class="num">30</td>'
        '<td class="num">10.3</td><td class="num">16.7</td><td class="num">1.621</td>'
        f'<td class="num">+191.6</td><td>{NORM_NOTE}</td></tr>'
    ) in page
    fidelity = page.split('<table class="fidelity"')[1].split("</table>")[0]
    assert fidelity.count("<tr><td") == 20
    assert "and 59 more (<code>ncu-classify summary --by fidelity</code>" in page
    assert (
        "\u25a0 smoke.json: coverage unknown: these cards were not made from a recorded program"
        " (ncu-classify record)</p>"
    ) in page


def test_markdown_report_has_coverage_and_fidelity(wan: CardFile, smoke_cards: CardFile) -> None:
    text = page_markdown([("wan.json", wan), ("smoke.json", smoke_cards)], "t")
    lines = text.splitlines()
    start = lines.index("### Coverage of the recorded program")
    assert lines[start + 2 : start + 9] == [
        "- \u25a0 `smoke.json`: coverage unknown: these cards were not made from a recorded"
        " program (ncu-classify record)",
        "",
        "| file | stage | measured by | program ms per inference | covered |"
        " replayed ms per inference |",
        "|---|---|---|---:|---:|---:|",
        "| \u25cf `wan.json` | dit | kernel time (torch.profiler at record) | 258.8 | 100.0 % |"
        " 258.1 |",
        "| \u25cf `wan.json` | output | kernel time (torch.profiler at record) | 0.189 |"
        " 100.0 % | 0.187 |",
        "| \u25cf `wan.json` | vae | kernel time (torch.profiler at record) | 310.2 | 100.0 % |"
        " 306.6 |",
    ]
    assert f"| \u25cf `wan.json` | output | `{OUTSIDE}` | {OUTSIDE_WHY} | 1 | 0 |" in lines
    assert f"| \u25cf `wan.json` | `{NORM}` | 30 | 10.3 | 16.7 | 1.621 | {NORM_NOTE} |" in lines
    assert "\u25cf `wan.json`: and 59 more" in lines
    assert lines.index("### Replay fidelity") < lines.index("### Time per stage and class")


def test_names_in_coverage_stay_text(wan: CardFile, tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>|x\x1b[31m"
    stages = [s.model_copy() for s in wan.coverage]
    stages[0] = stages[0].model_copy(
        update={"uncovered": [UncoveredWork(name=evil, why=f"why {evil}", calls=2, real_us=5.0)]}
    )
    cards = wan.model_copy(update={"coverage": stages})
    page = page_html([("x.json", cards)], "t")
    assert "<script>alert" not in page and "\x1b" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|x\\x1b[31m" in page
    text = page_markdown([("x.json", cards)], "t")
    assert "`<script>alert(1)</script>\\|x\\x1b[31m`" in text
    assert "why \\<script\\>alert(1)\\</script\\>\\|x\\\\x1b\\[31m" in text
    path = tmp_path / "evil.json"
    write_card_file(path, cards)
    out = tmp_path / "out.txt"
    assert run(["summary", str(path), "-o", str(out)]) == 0
    assert "not covered: <script>alert(1)</script>|x\\x1b[31m 0.005 ms (2 calls)" in (
        out.read_text()
    )
    assert "\x1b" not in out.read_text()


def test_the_shapes_below_a_target_are_named_in_every_coverage_line(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """The Wan 14B capture as a capture at a target stopped short would leave it: the DiT's 25
    largest shapes failed (pending, or a crash) and its 20 smallest below the target (58.7 us,
    22 calls). The summary line names the three largest failures, then the shapes below the
    target, then `and 22 more` with their time (the item was one of the `and 23 more`, whose
    time the line did not say); the page lists the 20 largest and then it (it was cut off)."""
    from helpers import copied_capture

    from ncu_classify.present.coverage import file_coverage
    from ncu_classify.verdicts.classify import classify

    def time(shape: dict) -> float:  # type: ignore[type-arg]
        return float(shape["real_us"] * shape["calls"])

    def stopped(manifest: dict) -> None:  # type: ignore[type-arg]
        dit = sorted((s for s in manifest["shapes"] if s["stage"] == "dit"), key=time)
        for shape in dit[-25:]:
            shape.update(status="failed", error="not reached", report=None)
        manifest["shapes"] = [s for s in manifest["shapes"] if s not in dit[:20]]
        manifest["coverage_target_pct"] = 99.5
        manifest["below_target"] = [
            {k: s[k] for k in ("group", "stage", "calls", "real_us")} for s in dit[:20]
        ]

    cards = classify([copied_capture(tmp_path, stopped, RECORDING, "cap")], rules, jobs=1)
    dit = next(stage for stage in cards.coverage if stage.stage == "dit")
    assert stage_line(dit).split("not covered: ")[1] == (
        "dit:linear:M4680_N5120_K5120:bf16:bias 71.6 ms (240 calls),"
        " dit:linear:M4680_N13824_K5120:bf16:bias 32.7 ms (40 calls),"
        " dit:linear:M4680_N5120_K13824:bf16:bias 31.5 ms (40 calls),"
        " (20 shapes below the coverage target) 0.0587 ms (22 calls), and 22 more (118.8 ms)"
    )
    page = file_coverage(cards)
    names = [work.name for _, work in page.uncovered]
    assert len(names) == 21 and names[-1] == "(20 shapes below the coverage target)"
    assert page.more_uncovered == 6  # 5 failed shapes and the output's kernels outside any op


@pytest.mark.parametrize("view", VIEWS)
def test_the_committed_tables_of_the_wan_recording_are_current(wan: CardFile, view: str) -> None:
    """reports/record/wan14b_every_op_<view>.csv, as reports/regenerate.sh writes them, are what
    summary gives now: a change of columns or figures that was not regenerated fails here."""
    committed = ROOT / "reports" / "record" / f"wan14b_every_op_{view}.csv"
    assert committed.read_text() == summary_csv(summarize(wan, view), view)
