"""`next --tries`: the Wan 14B recording's cards with what `try` measured on the H200
(fixtures/tries_h200: the VAE's top 10 moves and the program-wide bf16 + channels-last move)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.core.text import md_text
from ncu_classify.present.next_moves import NextMoves, next_moves
from ncu_classify.present.next_text import next_csv, next_markdown, stage_notes
from ncu_classify.tries.results import load_results

TRIES = ROOT / "fixtures" / "tries_h200"


@pytest.fixture(scope="module")
def measured(wan: CardFile) -> NextMoves:
    tries = [(name, load_results(TRIES / name / "tries.json")) for name in ("vae", "program_vae")]
    return next_moves(wan, "wan.json", ["vae"], tries)


def test_tried_moves_rank_by_what_they_saved(measured: NextMoves) -> None:
    """9 VAE moves won: ranked by their measured saving, each row saying so; the rest by
    headroom. The first conv's winner saves 45,522.96 us per inference."""
    tried = [m for m in measured.moves if m.measured is not None]
    assert len(tried) == 10 and all(m.ranked_by == "measured" for m in tried)
    assert all(m.ranked_by == "headroom" for m in measured.moves if m.measured is None)
    first = measured.moves[0]
    assert first.group.startswith("vae:conv3d:in1x96x6x482x834_w96x96")
    assert first.measured is not None and first.measured.winner == "bf16_channels_last_3d"
    assert first.measured.saving_us == 45272.52
    savings = [m.measured.saving_us or 0.0 for m in measured.moves[:9] if m.measured]
    assert savings == sorted(savings, reverse=True)


def test_the_stage_line_gives_the_winners_total_and_the_program_wide_move(
    measured: NextMoves,
) -> None:
    (stage,) = measured.measured
    assert (stage.moves_measured, stage.winners, stage.saving_us) == (10, 9, 115105.325)
    (program,) = stage.programs
    assert (program.move, program.saving_us) == ("bf16_channels_last", 143053.658)
    line = (
        "vae: measured: 9 of 10 moves tried win 115,105.3 us [114,558.3, 115,652.3] of"
        " 306,613.7 us per inference; program-wide bf16_channels_last: 143,053.7 us"
        " [141,627.0, 144,480.3]"
    )
    assert line in stage_notes(measured)
    text = next_markdown(measured, 3)
    assert f"- {md_text(line)}" in text
    cell = "measured: bf16_channels_last_3d saves 45,272.5 us [44,808.8, 45,736.2]"
    assert md_text(cell) in text


def test_csv_and_json_carry_the_measured_figures(measured: NextMoves) -> None:
    rows = list(csv.DictReader(io.StringIO(next_csv(measured))))
    assert (
        rows[0]["ranked_by"] == "measured" and rows[0]["measured_winner"] == "bf16_channels_last_3d"
    )
    assert float(rows[0]["measured_saving_ci95_low"]) == 44808.818
    assert "bf16=36964.56" in rows[0]["measured_alternatives"]
    untried = [r for r in rows if r["ranked_by"] == "headroom"]
    assert untried and all(r["measured_winner"] == "" for r in untried)
    again = NextMoves.model_validate_json(measured.model_dump_json())
    assert again == measured


def test_next_tries_on_the_command_line(
    wan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "next.json"
    code = run(["next", str(wan_file), "--tries", str(TRIES / "vae" / "tries.json"),
                "-o", str(out)])  # fmt: skip
    assert code == 0
    data = json.loads(out.read_text())
    assert data["schema_version"] == "1.3" and data["tries_files"] == ["tries.json"]
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": "1.0", "moves": 3}')
    code = run(["next", str(wan_file), "--tries", str(broken)])
    err = capsys.readouterr().err
    assert code == 3 and len(err.splitlines()) == 1
    assert f"{broken}:1:" in err and "not a `try` result" in err


def test_the_tries_frame_has_a_row_per_alternative() -> None:
    """36 rows for the VAE's 10 moves (each original first); the first move's winner exact."""
    from ncu_classify.present import tries_frame

    frame = tries_frame(load_results(TRIES / "vae" / "tries.json"))
    assert len(frame) == 36 and list(frame["label"][:4]) == [
        "as_recorded", "channels_last_3d", "bf16", "bf16_channels_last_3d",
    ]  # fmt: skip
    won = frame[frame["winner"]]
    assert len(won) == 9
    first = won.iloc[0]
    assert (first["us_per_call"], first["saving_us_per_inference"]) == (3088.3, 45272.52)
    assert (first["kernels"], first["tolerance_of"], bool(first["within_tolerance"])) == (
        2, "bf16", True,
    )  # fmt: skip
    assert frame["saving_us_per_inference"].isna().sum() == 10  # the originals


def test_the_report_shows_what_try_measured(
    wan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tries = str(TRIES / "vae" / "tries.json")
    page, summary = tmp_path / "r.html", tmp_path / "r.md"
    assert run(["report", str(wan_file), "--tries", tries, "-o", str(page)]) == 0
    assert run(["report", str(wan_file), "--tries", tries, "-o", str(summary)]) == 0
    html = page.read_text()
    assert "<b>measured: bf16_channels_last_3d saves 45,272.5 us [44,808.8, 45,736.2];" in html
    assert "vae: measured: 9 of 10 moves tried win 115,105.3 us" in html
    assert "vae: measured: 9 of 10 moves tried win 115,105.3 us" in summary.read_text()


def test_the_decode_s_ladder_in_one_line(wan: CardFile) -> None:
    """Every program-wide move measured for the decode and its fused chains, in the stage's
    line: bf16 129.75 ms, channels-last 23.43 ms, both 143.05 ms, 4 of 6 chains 17.59 ms
    (7,875.918 + 2,429.19 + 5,473.92 + 1,810.08), all six compiled 10.83 ms."""
    tries = [(n, load_results(TRIES / n / "tries.json")) for n in ("program_vae", "chains_vae")]
    tries += [
        (m, load_results(ROOT / "reports" / "tries" / f"program_vae_{m}.json"))
        for m in ("bf16", "channels_last")
    ]
    (stage,) = next_moves(wan, "wan.json", ["vae"], tries).measured
    assert [(p.move, p.saving_us) for p in stage.programs] == [
        ("bf16_channels_last", 143053.658), ("bf16", 129750.592), ("channels_last", 23425.874),
    ]  # fmt: skip
    assert (stage.chains_tried, stage.chains_won, stage.chains_saving_us) == (6, 4, 17589.108)
    # all six compiled, as compiling the decode would: the two slower ones take 6,757.6 us back
    assert (stage.chains_all_us, stage.chains_failed) == (10831.488, 0)


def test_what_next_cannot_show_as_measured_is_said(
    wan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The chains tries (6 chains, which are no cards, and the first conv again, measured
    also in vae/) and a tries file of the Wan 14B recording over the 480x832 workload's cards
    (no group in common): each a warning line, the figures still written."""
    out = tmp_path / "next.json"
    chains, vae = (str(TRIES / name / "tries.json") for name in ("chains_vae", "vae"))
    assert run(["next", str(wan_file), "--tries", vae, "--tries", chains, "-o", str(out)]) == 0
    conv = "vae:conv3d:in1x96x6x482x834_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    assert capsys.readouterr().err.splitlines() == [
        "ncu-classify: warning: chains_vae/tries.json: 6 of its 7 moves name no card of"
        f" {wan_file.parent.name}/cards.json (6 of them chains of device ops, which are no"
        " cards): not shown",
        f"ncu-classify: warning: {conv}: measured in vae/tries.json and chains_vae/tries.json:"
        " chains_vae/tries.json's shown",
    ]
    first = json.loads(out.read_text())["moves"][0]
    assert first["group"] == conv and first["measured"]["saving_us"] == 46182.0
    workload = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
    assert run(["next", str(workload), "--tries", vae, "-o", str(out)]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "ncu-classify: warning: tries.json: 10 of its 10 moves name no card of"
        " workload_h200_480x832/cards.json: not shown"
    ]
    assert json.loads(out.read_text())["measured"] == []


def test_a_move_measured_at_other_calls_is_said(
    wan: CardFile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ncu_classify.cards.files import write_card_file

    conv = "vae:conv3d:in1x96x6x482x834_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    cards = wan.model_copy(deep=True)
    (card,) = [c for c in cards.cards if c.group == conv]
    card.calls += 1
    path = tmp_path / "more.json"
    write_card_file(path, cards)
    vae = str(TRIES / "vae" / "tries.json")
    assert (
        run(["next", str(path), "--tries", vae, "--stage", "vae", "-o", str(tmp_path / "n.md")])
        == 0
    )
    assert capsys.readouterr().err.splitlines() == [
        f"ncu-classify: warning: {conv}: tries.json measured it at 12 calls per inference,"
        f" more.json has 13: its savings are per inference of the other"
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("cards", "{path}: a cards file, not a `try` result (tries.json)"),
        ("vae/plan.json", "{path}: a `try` plan (plan.json), not its results: tries.json is"
         " written beside it once the capture has run"),
    ],
)  # fmt: skip
def test_a_cards_file_or_a_plan_given_as_tries_is_named(
    wan_file: Path, capsys: pytest.CaptureFixture[str], given: str, expected: str
) -> None:
    path = wan_file if given == "cards" else TRIES / given
    assert run(["next", str(wan_file), "--tries", str(path)]) == 3
    assert capsys.readouterr().err.strip() == "ncu-classify: error: " + expected.format(path=path)


def test_a_program_wide_move_alone_is_shown(wan: CardFile) -> None:
    """program_vae alone (no move tried one at a time): its stage line (was: nothing shown)."""
    alone = next_moves(
        wan, "wan.json", [], [("p", load_results(TRIES / "program_vae" / "tries.json"))]
    )
    (stage,) = alone.measured
    assert (stage.stage, stage.moves_measured, stage.programs[0].saving_us) == (
        "vae", 0, 143053.658,
    )  # fmt: skip
    line = (
        "vae: measured: program-wide bf16_channels_last: 143,053.7 us [141,627.0, 144,480.3] of"
        " 306,613.7 us per inference"
    )
    assert [n for n in stage_notes(alone) if "measured" in n] == [line]
    dit_only = next_moves(
        wan, "wan.json", ["dit"], [("p", load_results(TRIES / "program_vae" / "tries.json"))]
    )
    assert dit_only.measured == []
