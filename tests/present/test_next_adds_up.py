"""Issue 37: `next`'s figures add up at every level (kernel, card, move, stage, overall; JSON,
CSV, Markdown and the terminal as printed), one header per quantity, unknown figures are
unknown (a SOL without the compute peak, a transpose without a duration), the terminal gets
tables whose figures are never cut, and `diff`'s roll-up and headroom say what happened."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from helpers import DERIVED, LEGACY, RECORD, ROOT, derived_path
from on_tty import on_terminal

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.headroom import card_headroom
from ncu_classify.cards.model import Card, CardFile
from ncu_classify.cli.entry import run
from ncu_classify.present import next_text
from ncu_classify.present.next_moves import next_moves, try_next
from ncu_classify.present.next_text import next_csv, next_markdown

CARDS = ROOT / "reports" / "diff" / "cards"
WAN = RECORD / "cards_wan14b_every_op_480x832.json"  # derived_path: the session's
W480 = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
EVERY = sorted(
    {
        *CARDS.glob("*.json"),
        *(ROOT / "fixtures").glob("workload_h200_*/cards.json"),
        *(ROOT / "reports" / "drill").glob("cards_*_roofline.json"),
        *DERIVED,  # derived_path: the session's
        ROOT / "reports" / "smoke_h200_cards.json",
        LEGACY,
    }
)


def _adds(measured: float, floor: float | None, recoverable: float | None) -> None:
    assert (floor is None) == (recoverable is None)
    if floor is not None and recoverable is not None:
        assert round(floor + recoverable, 3) == measured
        assert recoverable >= 0


@pytest.mark.parametrize("path", EVERY, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_committed_cards_set_adds_up(derived_cards: Path, path: Path) -> None:
    path = derived_path(path, derived_cards)
    report = next_moves(load_card_file(path), str(path))
    for s in [*report.stages, report.overall]:
        _adds(s.measured_us, s.kernel_roof_us, s.recoverable_at_kernel_roof_us)
        _adds(s.measured_us, s.at_sol_us, s.recoverable_at_sol_us)
        if s.kernel_roof_us is not None and s.at_sol_us is not None and not s.cards_without_roof:
            assert s.kernel_roof_us >= s.at_sol_us - 0.01 * s.cards  # no roof beats the SOL
    for m in report.moves:
        _adds(m.measured_us, m.kernel_roof_us, m.recoverable_at_kernel_roof_us)
        _adds(m.measured_us, m.at_sol_us, m.recoverable_at_sol_us)
        h = m.headroom
        _adds(h.measured_us, h.kernel_roof_us, h.kernel_headroom_us)
        _adds(h.measured_us, h.at_sol_us, h.sol_headroom_us)
        if h.kernel_headroom_us is not None:
            # the card's headroom is its kernels' headroom, less what falls under its SOL
            kernels = sum(k.headroom_us for k in h.kernels)
            assert round(h.kernel_headroom_us + h.below_sol_us, 3) == pytest.approx(
                min(kernels, h.measured_us), abs=1e-6
            )
            for k in h.kernels:
                assert round(k.roof_us + k.headroom_us, 3) == round(k.measured_us, 3)
        if h.overhead_us is not None and h.kernel_headroom_us is not None:
            assert h.overhead_us >= 0
            assert round(h.kernel_headroom_us + h.overhead_us, 3) == h.sol_headroom_us
    # CSV: measured = floor + recoverable in every row, per inference
    for row in csv.DictReader(io.StringIO(next_csv(report))):
        for floor, gain in (
            ("kernel_roof_us_per_inference", "recoverable_at_kernel_roof_us_per_inference"),
            ("at_sol_us_per_inference", "recoverable_at_sol_us_per_inference"),
        ):
            if row[floor]:
                measured = float(row["measured_us_per_inference"])
                assert round(float(row[floor]) + float(row[gain]), 3) == measured
    # Markdown, as printed: measured = at + recoverable, both pairs, in every stage row
    for line in next_markdown(report, top=1).splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[2][:1].isdigit():
            measured, *pairs = (c.replace(",", "") for c in cells[2:])
            for at, gain in (pairs[0:2], pairs[2:4]):
                if at != "unknown":
                    assert round(float(at) + float(gain), 1) == float(measured), line


def _stage_rows(path: Path) -> dict[str, str]:
    text = next_markdown(next_moves(load_card_file(path), str(path)))
    return {r.split(" | ")[0].lstrip("| "): r for r in text.splitlines() if r.startswith("| ")}


def test_the_issue_s_stages_add_up(derived_cards: Path) -> None:
    """The issue's rows: output 69.1 / 23.6 / 42.9 and Wan's dit 258,147.0 - 198,261.5 shown
    as 55,142.4 recoverable: kernel roofs below an op's SOL now count at it, as recoverable
    already did, so the roof column is the one that moved."""
    assert _stage_rows(W480)["output"] == "| output | 2 | 69.1 | 26.2 | 42.9 | 26.2 | 42.9 |"
    wan = _stage_rows(derived_path(WAN, derived_cards))
    assert wan["dit"] == "| dit | 59 | 258,147.0 | 203,004.6 | 55,142.4 | 196,762.3 | 61,384.7 |"
    assert wan["(all stages)"] == (
        "| (all stages) | 253 | 564,947.4 | 394,749.7 | 170,197.7 | 325,044.8 | 239,902.6 |"
    )
    report = next_moves(load_card_file(derived_path(WAN, derived_cards)), "wan")
    [dit] = [s for s in report.stages if s.stage == "dit"]
    assert (dit.cards_below_sol, dit.below_sol_us) == (17, 4743.042)
    text = next_markdown(report)
    assert "- dit: the kernel roofs of 17 cards fall 4,743.0 us below their SOL" in text


def test_each_quantity_has_its_own_header() -> None:
    text = next_markdown(next_moves(load_card_file(W480), "w"))
    headers = [r for r in text.splitlines() if r.startswith("| stage |") or r.startswith("| rank")]
    for header in headers:
        names = [c.strip() for c in header.strip("|").split("|")]
        assert len(names) == len(set(names)), header
    assert headers[0] == "| " + " | ".join(next_text.STAGE_HEADERS) + " |"
    assert "recoverable there" not in text and len(next_text.MOVE_HEADERS) == len(
        set(next_text.MOVE_HEADERS)
    )


def _fa2(cards: CardFile) -> Card:
    """FlashAttention-2's card of the 480x832 workload, its compute peak unknown."""
    [card] = [c for c in cards.cards if c.group.endswith("k28080of29640:bf16") and "v2" in c.group]
    assert card.roofline is not None
    roofline = card.roofline.model_copy(update={"peak_tflops": None})
    return card.model_copy(update={"roofline": roofline})


def test_a_card_whose_compute_peak_is_unknown_has_no_speed_of_light() -> None:
    cards = load_card_file(CARDS / "w480_gpu0.json")
    fa2 = _fa2(cards)
    room = card_headroom(fa2)
    assert room is not None
    # its bytes alone gave 34.857 us, "SOL % 1.7" for a kernel at a third of its peak
    assert (room.sol_us, room.sol_pct, room.at_sol_us, room.sol_headroom_us) == (None,) * 4
    assert room.sol_unknown == "the compute peak of its dtype is unknown"
    assert (room.kernel_roof_us, room.kernel_headroom_us) == (1063.961, 995.879)
    edited = cards.model_copy(update={"cards": [fa2]})
    report = next_moves(edited, "fa2")
    [move] = report.moves
    assert (move.at_sol_us, move.recoverable_at_sol_us, move.sol_pct) == (None, None, None)
    row = next(r for r in next_markdown(report).splitlines() if "flash_attn_v2" in r)
    assert "| 2,059.8 | 995.9 | unknown | unknown |" in row
    assert report.overall.at_sol_us is None and report.overall.cards_without_sol == 1


def test_a_transpose_without_a_duration_is_unknown_time() -> None:
    cards = {c.group: c for c in load_card_file(CARDS / "w480_gpu0.json").cards}
    conv = cards["vae:conv3d:in1x96x6x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32"]
    kernels = [k.model_copy(deep=True) for k in conv.kernels]
    [first] = [k for k in kernels if "nchwToNhwc" in k.kernel][:1]
    del first.metrics["dur_us"]
    text = try_next(conv.model_copy(update={"kernels": kernels}))
    assert text.startswith("channels_last_3d: drops 3 layout transposes (their time unknown);")
    assert "0.0 us per call" not in text


def _terminal(path: Path, columns: int, *extra: str) -> str:
    """What `next` prints on a terminal `columns` wide (a pipe gets the natural width)."""
    code, text = on_terminal(["next", str(path), *extra], columns)
    assert code == 0
    return text


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_next_on_a_terminal_is_tables_with_every_figure_whole(
    derived_cards: Path, columns: int
) -> None:
    out = _terminal(derived_path(WAN, derived_cards), columns, "--top", "3")
    assert "\\_" not in out and "| ---" not in out and "…" not in out
    assert max(map(len, out.splitlines())) <= columns
    report = next_moves(load_card_file(derived_path(WAN, derived_cards)), "wan")
    figures = [f"{value:,.1f}" for s in [*report.stages, report.overall] for value in (
        s.measured_us, s.kernel_roof_us, s.at_sol_us)]  # fmt: skip
    for name in ("dit", "vae", "output"):
        moves = [m for m in report.moves if m.stage == name][:3]
        figures += [f"{m.measured_us:,.1f}" for m in moves]
    words = out.split()
    assert [f for f in figures if f not in words] == []


def test_diff_roll_up_counts_an_absent_class_as_0_us(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    base, cand = CARDS / "dit_fp32_notf32.json", CARDS / "dit_fp32_tf32.json"
    assert run(["diff", str(base), str(cand), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = {r["primary"]: r for r in doc["rollup"]}
    dram, unresolved = rows["dram_bandwidth_bound"], rows["unresolved_no_dominant_limiter"]
    assert (dram["baseline_cards"], dram["baseline_us"], dram["delta_us"]) == (0, 0.0, 230.816)
    assert (unresolved["candidate_us"], unresolved["delta_us"]) == (0.0, -58.752)
    # TF32 on saved 18,292.1 us of 7,377.9 recoverable at fp32's SOL: it beat that SOL
    [dit] = doc["headroom"]
    assert (dit["saved_us"], dit["saved_of_sol_pct"], dit["beat_baseline_sol"]) == (
        18292.128,
        None,
        True,
    )
    md = tmp_path / "d.md"
    assert run(["diff", str(base), str(cand), "-o", str(md)]) == 0
    text = md.read_text()
    assert "| 18,292.1 | beat the baseline's SOL (another math mode) |" in text
    assert "247.9 %" not in text and "| missing |" not in text


def _vae_bf16(edit: dict[int, dict[str, object]]) -> CardFile:
    """The bf16 VAE cards with `edit` (card index: fields) applied."""
    cards = load_card_file(CARDS / "vae_bf16_cl3d.json")
    edited = [c.model_copy(update=edit.get(i, {})) for i, c in enumerate(cards.cards)]
    return cards.model_copy(update={"cards": edited})


def test_a_stage_says_its_caps_and_the_cards_it_counts_at_their_measured_time() -> None:
    cards = load_card_file(CARDS / "vae_bf16_cl3d.json")
    first = cards.cards[0]
    assert first.roofline is not None and first.kernels[0].roofline is not None
    hot = first.kernels[0].model_copy(
        update={"roofline": first.kernels[0].roofline.model_copy(update={"pct_of_roof": 150.0})}
    )
    edited = _vae_bf16(
        {
            0: {"kernels": [hot, *first.kernels[1:]]},
            1: {"nominal_mac_flops": None, "nominal_bytes": None},  # no model: no SOL
        }
    )
    report = next_moves(edited, "edited")
    [vae] = report.stages
    assert (vae.capped_cards, vae.cards_without_sol) == (1, 1)
    before = next_moves(cards, "bf16").stages[0]
    second = card_headroom(cards.cards[1])
    assert second is not None and second.at_sol_us is not None
    # the card without a SOL counts at its measured time there: nothing recoverable claimed
    assert vae.at_sol_us == round(
        before.at_sol_us - second.at_sol_us + second.measured_us,
        3,  # type: ignore[operator]
    )
    _adds(vae.measured_us, vae.at_sol_us, vae.recoverable_at_sol_us)
    text = next_markdown(report)
    assert "- vae: 1 card without a SOL: counted at the measured time at SOL" in text
    assert "- vae: 1 card capped at the measured time (a kernel above its roof" in text
    assert "a clock or counter error; capped at its measured time (0 headroom)" in text


def test_a_stage_name_with_a_newline_stays_one_escaped_line_on_the_terminal(
    tmp_path: Path,
) -> None:
    doc = json.loads((CARDS / "vae_bf16_cl3d.json").read_text())
    doc["cards"][0]["stage"] = "a\nb[bold]"
    cards = tmp_path / "odd.json"
    cards.write_text(json.dumps(doc))
    out = _terminal(cards, 200)
    assert [line.split()[0] for line in out.splitlines() if "a\\x0ab[bold]" in line][:1] == [
        "a\\x0ab[bold]"
    ]
    assert not [line for line in out.splitlines() if line.split()[:1] == ["b[bold]"]]


def test_a_tile_note_without_a_colon_is_no_internal_error() -> None:
    cards = {c.group: c for c in load_card_file(CARDS / "w480_gpu0.json").cards}
    card = cards["dit:linear:M4680_N5120_K5120:bf16:bias"]
    top = card.kernels[0].model_copy(update={"verdict_note": "132 output tiles on 132 SMs"})
    text = try_next(card.model_copy(update={"kernels": [top, *card.kernels[1:]]}))
    assert "another tile size or stream-K (132 output tiles on 132 SMs)" in text


def test_the_report_page_states_the_same_notes_under_its_headroom_table() -> None:
    from ncu_classify.present.page import page_html

    cards = load_card_file(CARDS / "vae_bf16_cl3d.json")
    page = page_html([("bf16", cards)], "t")
    assert '<p class="note">vae: the kernel roofs of 3 cards fall 1.6 us below their SOL' in page
    assert ">recoverable there<" not in page and ">recoverable at kernel roofs<" in page


def test_a_saving_where_the_baseline_had_no_sol_headroom_beat_its_sol() -> None:
    from ncu_classify.cards.headroom import StageTotals
    from ncu_classify.compare.headroom_diff import headroom_changes
    from ncu_classify.compare.matching import CardPair

    cards = load_card_file(CARDS / "vae_bf16_cl3d.json")
    card = cards.cards[0]
    room = card_headroom(card)
    assert room is not None and room.sol_us is not None
    at_sol = card.model_copy(update={"summed_kernel_us": room.sol_us})  # nothing left
    faster = card.model_copy(update={"summed_kernel_us": room.sol_us / 2})
    [change] = headroom_changes(
        [at_sol], [faster], [("vae", CardPair(baseline=at_sol, candidate=faster))]
    )
    assert isinstance(change.baseline, StageTotals)
    assert change.baseline.recoverable_at_sol_us == 0.0
    assert (change.saved_of_sol_pct, change.beat_baseline_sol) == (None, True)


def test_a_chart_tooltip_of_a_kernel_without_a_duration_says_so() -> None:
    from ncu_classify.present.page import page_html

    cards = load_card_file(CARDS / "vae_bf16_cl3d.json")
    first = cards.cards[0]
    kernel = first.kernels[0].model_copy(deep=True)
    del kernel.metrics["dur_us"]
    edited = first.model_copy(update={"kernels": [kernel, *first.kernels[1:]]})
    page = page_html([("bf16", cards.model_copy(update={"cards": [edited]}))], "t")
    assert "None us" not in page and "duration unknown" in page
