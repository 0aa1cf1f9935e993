"""Cards as DataFrames (`ncu_classify.load_cards`) and the CSV/Parquet tables of classify,
summary and diff, on the committed H200 capture: values equal to the cards, units in the
column names, missing values missing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from helpers import LEGACY, ROOT

import ncu_classify
from ncu_classify.cli.entry import run
from ncu_classify.present.frames import METRIC_COLUMNS, column_name

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832"
CARDS = WORKLOAD / "cards.json"


def test_two_lines_from_cards_to_the_kernels_furthest_below_their_roof() -> None:
    kernels = ncu_classify.load_cards(CARDS, level="kernel")
    worst = kernels.nsmallest(10, "pct_of_roof")[["group", "kernel", "pct_of_roof"]]
    assert len(kernels) == 78 and len(worst) == 10
    assert worst["pct_of_roof"].is_monotonic_increasing
    assert worst["pct_of_roof"].iloc[0] == kernels["pct_of_roof"].min()


def test_card_rows_carry_the_dominant_kernel_with_units_in_names() -> None:
    cards = ncu_classify.load_cards(CARDS)
    row = cards.set_index("group").loc["dit:linear:M4680_N5120_K5120:bf16:bias"]
    doc = json.loads(CARDS.read_text())
    [card] = [c for c in doc["cards"] if c["group"] == "dit:linear:M4680_N5120_K5120:bf16:bias"]
    [top] = [k for k in card["kernels"] if k["kernel"] == card["dominant_kernel"]]
    assert row["summed_kernel_us_per_call"] == card["summed_kernel_us"] == 304.992
    assert row["dur_us"] == top["metrics"]["dur_us"]
    assert row["sm_pct"] == top["metrics"]["sm_pct"]
    assert row["pct_of_roof"] == top["roofline"]["pct_of_roof"] == 94.0252
    assert row["mfu_pct"] == card["roofline"]["mfu_pct"]
    assert row["grid_blocks"] == 132.0 and row["peak_dram_bytes_per_cycle"] == 1504.0
    assert row["kernel"] == card["dominant_kernel"] and row["primary"] == "compute_bound"
    assert len(cards) == 34 and cards["stage"].tolist()[0] == "dit"


@pytest.mark.parametrize(
    ("key", "unit", "column"),
    [
        ("dur_us", "us", "dur_us"),
        ("grid", "blocks", "grid_blocks"),
        ("regs", "registers/thread", "regs_per_thread"),
        ("smem_static_b", "byte", "smem_static_b"),
        ("peak_dram_bytes", "byte/cycle", "peak_dram_bytes_per_cycle"),
        ("peak_ffma", "inst/cycle", "peak_ffma_inst_per_cycle"),
        ("flops_hgmma_bf16", "FLOP", "flops_hgmma_bf16"),
        ("sm_cycles_active", "cycles", "sm_cycles_active"),
        ("waves", "waves", "waves"),
    ],
)
def test_column_names_say_their_unit(key: str, unit: str, column: str) -> None:
    assert column_name(key, unit) == column
    if key in METRIC_COLUMNS:
        assert METRIC_COLUMNS[key] == column


def test_legacy_missing_values_are_nan_not_zero() -> None:
    kernels = ncu_classify.load_cards(LEGACY, level="kernel")
    fa2 = kernels[kernels["group"] == "attention:480_short:fa2:self"]
    assert len(fa2) >= 1 and fa2["dur_us"].isna().all()
    assert kernels["pct_of_roof"].isna().all()  # legacy cards have no roofline
    fa3 = kernels[kernels["group"] == "attention:480_long:fa3:self"]
    assert fa3["tensor_pct"].isna().all()  # null in the legacy file, not 0


def test_classify_summary_and_diff_write_csv_and_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    cards = tmp_path / "cards.json"
    csv_path, parquet = tmp_path / "kernels.csv", tmp_path / "kernels.parquet"
    for table in (csv_path, parquet):
        argv = ["classify", str(WORKLOAD), "-o", str(cards), "--jobs", "2", "--table", str(table)]
        assert run([*argv, "--table-level", "kernel"]) == 0
    expected = ncu_classify.load_cards(cards, level="kernel")
    from_parquet = pd.read_parquet(parquet)
    pd.testing.assert_frame_equal(from_parquet, expected, check_dtype=False)
    from_csv = pd.read_csv(csv_path)
    assert list(from_csv.columns) == list(expected.columns)
    assert from_csv["dur_us"].tolist() == expected["dur_us"].tolist()
    assert math.isnan(from_csv["pct_of_roof"].iloc[-1]) == math.isnan(
        expected["pct_of_roof"].iloc[-1]
    )
    stages = tmp_path / "stages.parquet"
    assert run(["summary", str(cards), "-o", str(stages)]) == 0
    summary = pd.read_parquet(stages)
    vae = summary[(summary["stage"] == "vae") & (summary["primary"] == "l2_bandwidth_bound")]
    assert vae["cards"].tolist() == [2]
    assert vae["kernel_us_per_inference"].round(1).tolist() == [2234.9]
    compared = tmp_path / "diff.parquet"
    assert run(["diff", str(CARDS), str(cards), "--format", "parquet", "-o", str(compared)]) == 0
    assert set(pd.read_parquet(compared)["change"]) == {"same"}
    assert run(["diff", str(CARDS), str(cards), "--format", "parquet"]) == 2  # binary: needs -o


def test_load_cards_refuses_an_unknown_level_and_names_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="level must be 'card', 'kernel' or 'coverage'"):
        ncu_classify.load_cards(CARDS, level="bogus")  # type: ignore[arg-type]
    broken = tmp_path / "broken.json"
    broken.write_text('{"cards": 3')
    with pytest.raises(ncu_classify.CardsError, match=r"broken\.json:1:12: invalid JSON"):
        ncu_classify.load_cards(broken)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--table", "same"], "this command writes JSON, but .csv names CSV"),
        (["--table", "t.txt"], "--table t.txt: expected a file ending in .csv, .parquet, .pq"),
        (["--table", "-"], "--table -: expected a file ending in .csv, .parquet, .pq"),
        (["--table", "nodir/t.csv"], "--table nodir/t.csv: folder"),
    ],
)
def test_classify_table_usage_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a new file, so that the -o check alone cannot see the clash; cards are never a .csv
    cards = tmp_path / ("new.csv" if "same" in argv else "new.json")
    table = [str(cards) if a == "same" else a for a in argv]
    assert run(["classify", str(WORKLOAD), "-o", str(cards), *table]) == 2
    assert message in capsys.readouterr().err
    assert not cards.exists()


def test_output_format_follows_or_must_agree_with_the_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = tmp_path / "d.md"
    assert run(["diff", str(CARDS), str(CARDS), "-o", str(md)]) == 0
    assert md.read_text().startswith("## ncu-classify diff")
    assert (
        run(["diff", str(CARDS), str(CARDS), "--format", "csv", "-o", str(tmp_path / "x.parquet")])
        == 2
    )
    assert "--format csv but -o" in capsys.readouterr().err
    assert run(["summary", str(CARDS), "--csv", "-o", str(tmp_path / "s.parquet")]) == 2
    plain = tmp_path / "s.csv"
    assert run(["summary", str(CARDS), "-o", str(plain)]) == 0
    assert plain.read_text().startswith(
        "stage,primary,cards,calls,kernel_us_per_inference,share_of_stage,untimed\n"
    )
