"""Time per stage by each kernel's own class, on real H200 cards: a conv card's layout
transposes count under their own class, not under the implicit GEMM's; stage totals agree with
the view by card class, weighted by calls alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import RECORD, ROOT, derived_path

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.cards.rollup import by_kernel_class, by_stage
from ncu_classify.cli.entry import run

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
RECORDED = RECORD / "cards_wan_480x832.json"  # recorded calls > 1
CONV96 = "vae:conv3d:in1x96x3x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32"


@pytest.fixture(scope="module")
def workload() -> CardFile:
    return load_card_file(WORKLOAD)


def test_a_conv_card_s_transposes_count_under_their_own_class(workload: CardFile) -> None:
    [card] = [c for c in workload.cards if c.group == CONV96]
    assert card.primary == "unresolved_no_dominant_limiter" and card.summed_kernel_us == 441.024
    rows = {r.kernel_class: (r.kernels, r.kernel_us) for r in by_kernel_class([card])}
    assert rows == {
        "unresolved_no_dominant_limiter": (1, 347.52),  # the implicit GEMM
        "dram_bandwidth_bound": (1, 70.208),  # nchwToNhwc of the input
        "l2_bandwidth_bound": (1, 19.84),  # nhwcToNchw of the output
        "partial_wave_tail": (1, 3.456),  # nchwToNhwc of the weights
    }


def test_the_vae_by_kernel_class(workload: CardFile) -> None:
    rows = [(r.kernel_class, r.kernels, r.kernel_us) for r in by_kernel_class(workload.cards)
            if r.stage == "vae"]  # fmt: skip
    assert rows == [
        ("l2_bandwidth_bound", 13, 2004.736),
        ("compute_bound", 11, 1689.696),
        # two persistent implicit GEMMs (grid 132, waves 1.00) are no tail: unresolved
        ("unresolved_no_dominant_limiter", 10, 771.072),
        ("dram_bandwidth_bound", 8, 643.616),  # no vae card is DRAM-bound: its kernels are
        ("partial_wave_tail", 19, 399.392),
    ]
    assert "dram_bandwidth_bound" not in {
        r.primary for r in by_stage(workload.cards) if r.stage == "vae"
    }


@pytest.mark.parametrize("path", [WORKLOAD, RECORDED])
def test_stage_totals_agree_with_the_view_by_card(path: Path, derived_cards: Path) -> None:
    cards = load_card_file(derived_path(path, derived_cards))
    assert any(c.calls > 1 for c in cards.cards) == (path == RECORDED)
    card_totals: dict[str, float] = {}
    for row in by_stage(cards.cards):
        card_totals[row.stage] = card_totals.get(row.stage, 0.0) + row.kernel_us
    kernel_totals: dict[str, float] = {}
    shares: dict[str, float] = {}
    for kr in by_kernel_class(cards.cards):
        kernel_totals[kr.stage] = kernel_totals.get(kr.stage, 0.0) + kr.kernel_us
        shares[kr.stage] = shares.get(kr.stage, 0.0) + (kr.share_of_stage or 0.0)
    assert list(kernel_totals) == list(card_totals)  # the same stages, in the same order
    for stage, total in card_totals.items():
        assert kernel_totals[stage] == pytest.approx(total, abs=0.01), stage
        assert shares[stage] == pytest.approx(1.0), stage


def test_summary_by_kernel_as_csv(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["summary", str(WORKLOAD), "--by", "kernel", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "stage,kernel_class,kernels,kernel_us_per_inference,share_of_stage,untimed"
    assert "vae,dram_bandwidth_bound,8,643.616,0.1168,0" in lines
    assert len(lines) == 1 + 12


def test_a_bad_grouping_names_the_views(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["summary", str(WORKLOAD), "--by", "kernels"]) == 2
    expected = "--by 'kernels': expected stage, kernel, shape, coverage or fidelity"
    assert expected in capsys.readouterr().err
