"""Summaries of a CardFile: per stage, and per shape with why a shape failed or is incomplete."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.present.summary import ShapeRow, summarize, summary_csv
from ncu_classify.verdicts.judge import reclassify
from ncu_classify.verdicts.rules import LoadedRules

FLASH = "attention:flash_attn:self_b1_h40_d128_q4680_k4680of29640:bf16"
FLASH_ERROR = "unsupported: backend flash_attn is not importable here: No module named 'flash_attn'"


def test_by_stage_rows_of_the_smoke_capture(smoke_cards: CardFile) -> None:
    assert summary_csv(summarize(smoke_cards)).splitlines() == [
        "stage,primary,cards,calls,kernel_us_per_inference,share_of_stage,untimed",
        "dit,compute_bound,1,1,303.008,0.7464,0",
        "dit,dram_bandwidth_bound,1,1,77.856,0.1918,0",
        "dit,unresolved_no_dominant_limiter,1,1,25.088,0.0618,0",
        "vae,compute_bound,2,2,889.312,0.9780,0",
        "vae,unresolved_no_dominant_limiter,1,1,19.968,0.0220,0",
        "attention,unresolved_no_dominant_limiter,2,2,1420.576,0.6503,0",
        "attention,compute_bound,1,1,763.84,0.3497,0",
        "attention,failed,1,1,,,1",  # untimed: unknown, never 0
        "output,dram_bandwidth_bound,1,1,21.6,1.0000,0",
    ]


def test_by_shape_rows_of_the_smoke_capture(smoke_cards: CardFile) -> None:
    rows = summarize(smoke_cards, by="shape")
    assert [(r.stage, r.primary, r.status, r.kernel_us_per_call) for r in rows] == [
        ("dit", "compute_bound", "classified", 303.008),
        ("dit", "unresolved_no_dominant_limiter", "unresolved", 25.088),
        ("dit", "dram_bandwidth_bound", "classified", 77.856),
        ("vae", "compute_bound", "classified", 471.744),
        ("vae", "compute_bound", "classified", 417.568),
        ("vae", "unresolved_no_dominant_limiter", "unresolved", 19.968),
        ("attention", "compute_bound", "classified", 763.84),
        ("attention", "unresolved_no_dominant_limiter", "unresolved", 1325.536),
        ("attention", "unresolved_no_dominant_limiter", "unresolved", 95.04),
        ("attention", "failed", "failed", None),
        ("output", "dram_bandwidth_bound", "classified", 21.6),
    ]
    assert rows[9] == ShapeRow(
        stage="attention",
        group=FLASH,
        primary="failed",
        status="failed",
        calls=1,
        kernel_us_per_call=None,
        kernel_us_per_inference=None,
        dominant_kernel=None,
        problem=FLASH_ERROR,
    )
    assert all(r.problem is None for i, r in enumerate(rows) if i != 9)
    assert rows[0].dominant_kernel == "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_bias_TNT"


def test_by_shape_csv_keeps_template_names_whole(smoke_cards: CardFile) -> None:
    text = summary_csv(summarize(smoke_cards, by="shape"), by="shape")
    lines = text.splitlines()
    assert lines[0] == (
        "stage,group,primary,status,calls,kernel_us_per_call,kernel_us_per_inference,"
        "dominant_kernel,problem,stability"
    )
    assert lines[10] == (
        f"attention,{FLASH},failed,failed,1,,,,"
        "unsupported: backend flash_attn is not importable here: No module named 'flash_attn',"
    )  # no stability: captured once
    parsed = list(csv.reader(io.StringIO(text)))
    assert all(len(row) == 10 for row in parsed)
    assert parsed[8][7] == smoke_cards.cards[7].dominant_kernel  # commas inside the template
    assert "Flash_fwd_kernel_traits<(int)128, (int)128" in parsed[8][7]


def test_by_shape_says_why_legacy_cards_are_incomplete(
    rules: LoadedRules, legacy_path: Path
) -> None:
    rows = summarize(reclassify(load_card_file(legacy_path), rules), by="shape")
    incomplete = [(i, r) for i, r in enumerate(rows) if r.status == "incomplete"]
    assert [(i, r.primary, r.kernel_us_per_call) for i, r in incomplete] == [
        (12, "incomplete", 158.56),
        (13, "incomplete", 287.104),
        (25, "incomplete", 168.224),
    ]
    problem = incomplete[0][1].problem or ""
    assert problem.startswith("dominant_kernel 'sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32")
    assert "is not among the 4 listed kernels" in problem
    assert problem.endswith(
        "is the legacy total; 4 of the 4 listed kernels have a duration, summing to 32.192"
    )
    # Notes of classified cards (parsed shape_parameters) are not problems.
    assert rows[32].primary == "compute_bound" and rows[32].problem is None
