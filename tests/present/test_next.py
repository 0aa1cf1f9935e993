"""`ncu-classify next` on the committed cards: per stage totals equal the sum of their moves,
every per-inference figure is the per-call one x calls, physics holds (a kernel never beats its
roof, nothing recoverable is negative), the JSON follows its published schema, and what to try
follows from the card's own facts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from helpers import RECORD, ROOT, derived_path

from ncu_classify.cards.files import load_card_file
from ncu_classify.cli.entry import run
from ncu_classify.present.next_moves import next_moves, try_next
from ncu_classify.present.schema import NEXT_SCHEMA_FILE, next_schema_text

FP32 = ROOT / "reports" / "diff" / "cards" / "w480_gpu0.json"
BF16 = ROOT / "reports" / "diff" / "cards" / "vae_bf16_cl3d.json"
WAN = RECORD / "cards_wan14b_every_op_480x832.json"  # derived_path: the session's


@pytest.mark.parametrize("path", [FP32, BF16, WAN])
def test_totals_add_up_and_physics_holds(path: Path, derived_cards: Path) -> None:
    path = derived_path(path, derived_cards)
    report = next_moves(load_card_file(path), str(path))
    for stage in [*report.stages, report.overall]:
        moves = [m for m in report.moves if stage.stage in ("(all stages)", m.stage)]
        assert stage.measured_us == pytest.approx(sum(m.measured_us for m in moves), abs=0.01)
        assert stage.recoverable_at_kernel_roof_us == pytest.approx(
            sum(m.recoverable_at_kernel_roof_us or 0.0 for m in moves), abs=0.01
        )
    assert [m.rank for m in report.moves] == list(range(1, len(report.moves) + 1))
    for move in report.moves:
        room = move.headroom
        assert room.kernel_roof_us is not None and room.kernel_headroom_us is not None
        assert 0 <= room.kernel_roof_us <= room.measured_us
        assert move.recoverable_at_kernel_roof_us == round(room.kernel_headroom_us * move.calls, 3)
        assert (move.recoverable_at_kernel_roof_us or 0) >= 0
        assert (move.recoverable_at_sol_us or 0) >= 0
        assert all(k.roof_us <= k.measured_us for k in room.kernels)
        if room.sol_us is not None and room.sol_us > room.measured_us:  # said, never hidden
            assert room.flags[-1].startswith("faster than its speed of light")
            # captured before a `*_like` factory's nominal bytes stopped counting its input
            assert move.group == "vae:aten.zeros_like.default:1x384x1x60x104:fp32"
    ranked = [m.recoverable_at_sol_us or 0.0 for m in report.moves]
    assert ranked == sorted(ranked, reverse=True)


def test_the_vae_comparison_per_decode() -> None:
    before = next_moves(load_card_file(FP32), "fp32", ["vae"]).overall
    after = next_moves(load_card_file(BF16), "bf16", ["vae"]).overall
    # kernel roofs below an op's SOL count at it (0.315 and 1.639 us), so the columns add up
    assert (before.measured_us, before.kernel_roof_us) == (5547.36, 2984.492)
    assert (after.measured_us, after.kernel_roof_us) == (2241.856, 1475.514)
    assert (before.below_sol_us, after.below_sol_us) == (0.315, 1.639)
    assert (before.at_sol_us, after.at_sol_us) == (1683.425, 861.834)


def test_what_to_try_follows_from_the_card() -> None:
    cards = {c.group: c for c in load_card_file(FP32).cards}
    conv = cards["vae:conv3d:in1x96x6x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32"]
    assert try_next(conv) == (
        "channels_last_3d: drops 3 layout transposes (224.2 us per call);"
        " bf16 instead of TF32 (wgmma bf16 peak is 2x TF32's)"
    )
    fa2 = cards["attention:flash_attn_v2:self_b1_h10_d128_q4680_k4680of29640:bf16"]
    assert try_next(fa2) == (
        "FlashAttention-3 or cuDNN SDPA: this mma.sync kernel tops out at 2/3 of the wgmma peak"
    )
    cl3d = {c.group: c for c in load_card_file(BF16).cards}
    bf16 = cl3d["vae:conv3d:in1x96x6x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:bf16:cl3d"]
    assert "channels_last_3d" not in try_next(bf16) and "TF32" not in try_next(bf16)
    assert try_next(bf16).startswith("a wgmma kernel: this mma.sync kernel")


def test_the_json_follows_its_published_schema(tmp_path: Path, derived_cards: Path) -> None:
    out = tmp_path / "next.json"
    wan = derived_path(WAN, derived_cards)
    assert run(["next", str(wan), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, json.loads(NEXT_SCHEMA_FILE.read_text()))
    assert NEXT_SCHEMA_FILE.read_text() == next_schema_text()
    assert doc["schema_version"] == "1.3" and len(doc["moves"]) == 253
    assert [s["stage"] for s in doc["stages"]] == ["dit", "vae", "output"] or doc["stages"]
    again = tmp_path / "again.json"
    assert run(["next", str(wan), "-o", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()  # no clock in it


def test_an_unknown_stage_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["next", str(BF16), "--stage", "dit"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ncu-classify: error: --stage 'dit': {BF16} has no such stage"]


def test_the_diff_shows_headroom_before_and_after(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    assert (
        run(["diff", str(FP32), str(BF16), "--stage", "vae", "--format", "json", "-o", str(out)])
        == 0
    )
    [vae] = json.loads(out.read_text())["headroom"]
    assert (vae["baseline"]["measured_us"], vae["candidate"]["measured_us"]) == (5547.36, 2241.856)
    assert vae["saved_us"] == 3305.504 and vae["saved_of_sol_pct"] == 85.55


def test_the_chart_draws_each_kernel_s_distance_to_its_roof() -> None:
    from ncu_classify.present.page import page_html

    cards = load_card_file(BF16)
    page = page_html([("bf16", cards)], "t")
    stems = page.count('stroke-dasharray="2 2"/>')
    below = [
        k for c in cards.cards for k in c.kernels
        if k.roofline and k.roofline.roof_tflops and k.roofline.achieved_tflops
        and (k.roofline.intensity.get("dram") or 0) > 0
        and k.roofline.roof_tflops > k.roofline.achieved_tflops
    ]  # fmt: skip
    assert stems == len(below) > 10
    assert "<h2>Headroom</h2>" in page and "headroom us" in page


def test_next_says_what_share_of_the_program_it_covers(derived_cards: Path) -> None:
    from ncu_classify.present.next_text import next_markdown

    wan = next_markdown(next_moves(load_card_file(derived_path(WAN, derived_cards)), "wan"))
    assert (
        "- coverage dit: 100.0 % of 258.8 ms of the program's kernel time (torch.profiler at"
        " record); replayed 258.1 ms; not covered: nothing"
    ) in wan
    assert wan.count("- coverage ") == 3
    bf16 = next_moves(load_card_file(BF16), "bf16")
    assert (
        bf16.coverage == []
        and "- coverage: unknown: these cards were not made" in next_markdown(bf16)
    )
