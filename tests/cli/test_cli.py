"""The CLI end to end on real fixtures: outputs, one-line errors, documented exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ROOT, SMOKE, USER_FULL, unstamped
from typer.testing import CliRunner

from ncu_classify.cli.entry import app

runner = CliRunner()


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, [str(a) for a in args])


def test_classify_writes_cards_and_prints_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "cards.json"
    result = _run("classify", SMOKE, USER_FULL, "-o", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == "1.10" and doc["rules_id"] == "legacy-v1"
    assert len(doc["cards"]) == 15
    assert doc["by_stage"]["dit"] == {
        "compute_bound": 1,
        "dram_bandwidth_bound": 1,
        "unresolved_no_dominant_limiter": 1,
    }
    assert "compute_bound" in result.stdout and "wrote 15 cards" in result.stdout


def test_classify_twice_is_byte_identical_but_the_timestamp(tmp_path: Path) -> None:
    texts = []
    for name in ("a.json", "b.json"):
        assert _run("classify", SMOKE, "-o", tmp_path / name, "--jobs", "2").exit_code == 0
        texts.append(unstamped((tmp_path / name).read_text()))
    assert texts[0] == texts[1]
    assert texts[0] != (tmp_path / "a.json").read_text()  # the stamp was there, and replaced


def test_classify_bad_inputs_exit_4_and_still_write(tmp_path: Path) -> None:
    junk = tmp_path / "junk.ncu-rep"
    junk.write_text("nope")
    out = tmp_path / "cards.json"
    result = _run("classify", junk, SMOKE / "dit.ncu-rep.xz", "-o", out)
    assert result.exit_code == 4
    assert f"ncu-classify: error: {junk}: not an Nsight Compute report (bad file header)" in (
        result.stderr
    )
    assert len(json.loads(out.read_text())["cards"]) == 3
    assert "Traceback" not in result.output


def test_classify_nothing_readable_writes_nothing(tmp_path: Path) -> None:
    junk = tmp_path / "junk.ncu-rep"
    junk.write_text("nope")
    result = _run("classify", junk, "-o", tmp_path / "cards.json")
    assert result.exit_code == 4
    assert not (tmp_path / "cards.json").exists()


def test_bad_rules_file_exit_3_names_the_line(tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text(
        "id: r\nrules:\n  - {name: a, text: t, when: {metric: nope, op: '>', value: 1},"
        " alternative_explanation: a, counter_experiment: b}\n"
    )
    result = _run("classify", SMOKE, "-o", tmp_path / "c.json", "--rules", rules)
    assert result.exit_code == 3
    assert result.stderr.startswith(f"ncu-classify: error: {rules}:3:")
    assert "unknown metric 'nope'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_reclassify_legacy_keeps_order_and_fields(tmp_path: Path, legacy_path: Path) -> None:
    out = tmp_path / "new.json"
    result = _run("reclassify", legacy_path, "-o", out)
    assert result.exit_code == 0, result.output
    old, new = json.loads(legacy_path.read_text()), json.loads(out.read_text())
    assert [c["group"] for c in new["cards"]] == [c["group"] for c in old["cards"]]
    assert list(new["cards"][0])[: len(old["cards"][0])] == list(old["cards"][0])
    assert new["rules_id"] == "legacy-v1"
    repaired = [k for c in new["cards"] for k in c["kernels"] if k.get("metric_repairs")]
    assert [k["metrics"]["dur_us"] for k in repaired] == [140.096, 3.648, 1340.0, 80.96, 107.456]
    incomplete = [c["group"][:45] for c in new["cards"] if c["status"] == "incomplete"]
    assert len(incomplete) == 3


def test_reclassify_our_own_cards_with_other_rules(tmp_path: Path) -> None:
    cards = tmp_path / "cards.json"
    assert _run("classify", SMOKE, "-o", cards).exit_code == 0
    strict = tmp_path / "strict.yaml"
    text = (ROOT / "rules" / "default.yaml").read_text().replace("value: 60}", "value: 96}")
    strict.write_text(text.replace("id: legacy-v1", "id: strict96"))
    out = tmp_path / "re.json"
    assert _run("reclassify", cards, "-o", out, "--rules", strict).exit_code == 0
    doc = json.loads(out.read_text())
    gemm = doc["cards"][0]
    # sm 94.46% and tensor 95.56% of peak: compute bound at 60%, not at 96%.
    assert gemm["primary"] == "unresolved_no_dominant_limiter"
    assert gemm["kernels"][0]["classification"] == "unresolved_no_dominant_limiter"
    assert doc["rules_id"] == "strict96"


def test_summary_csv_shares(tmp_path: Path) -> None:
    cards = tmp_path / "cards.json"
    assert _run("classify", SMOKE, "-o", cards).exit_code == 0
    result = _run("summary", cards, "--csv")
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "stage,primary,cards,calls,kernel_us_per_inference,share_of_stage,untimed"
    assert "dit,compute_bound,1,1,303.008,0.7464,0" in lines
    assert "vae,compute_bound,2,2,889.312,0.9780,0" in lines
    assert "attention,failed,1,1,,,1" in lines  # no time (unknown, never 0), counted as such


def test_summary_of_a_non_cards_file_exit_3(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"cards": 3')
    result = _run("summary", bad)
    assert result.exit_code == 3
    assert (
        result.stderr.strip()
        == f"ncu-classify: error: {bad}:1:12: invalid JSON: Expecting ',' delimiter"
    )


def test_capture_bad_shapes_file_is_one_line_without_traceback(tmp_path: Path) -> None:
    shapes = tmp_path / "s.yaml"
    shapes.write_text("stages:\n  dit:\n    - {op: linear, M: -1, N: 1, K: 1}\n")
    result = _run("capture", "--shapes", shapes, "-o", tmp_path / "raw")
    assert result.exit_code == 3
    assert result.stderr.strip() == (
        f"ncu-classify: error: {shapes}:3:20: stages.dit.0.M: Input should be greater than 0"
    )


def test_capture_without_ncu_exit_6(tmp_path: Path) -> None:
    result = _run(
        "capture",
        "--shapes",
        ROOT / "fixtures" / "shapes" / "smoke.yaml",
        "-o",
        tmp_path / "raw",
        "--ncu",
        "no-such-ncu-binary",
    )
    assert result.exit_code == 6
    assert "ncu not found ('no-such-ncu-binary' is not on PATH)" in result.stderr


def test_published_schema_is_current() -> None:
    from ncu_classify.present.schema import SCHEMA_FILE, cards_schema_text

    assert SCHEMA_FILE.read_text() == cards_schema_text()
    schema = json.loads(SCHEMA_FILE.read_text())
    assert "kernels" in schema["$defs"]["Card"]["properties"]


def test_version_and_metrics(capsys) -> None:  # type: ignore[no-untyped-def]
    from ncu_classify import __version__
    from ncu_classify.cli.entry import run

    assert run(["--version"]) == 0
    assert capsys.readouterr().out == f"ncu-classify {__version__}\n"
    assert run(["metrics", "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "key,unit,ncu_names,description" and len(rows) == 1 + 54 + 2 + 37
    assert rows[3].startswith(
        "tensor_pct,%,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
        " | sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,"
    )
    assert rows[4].startswith("tensor_active_pct,%,sm__pipe_tensor_op_hmma_cycles_active.avg.")
    assert rows[55].startswith("sm_active_over_elapsed,ratio,sm_cycles_active / cycles_elapsed")
    assert rows[56].startswith("persistent,0 or 1,launch__waves_per_multiprocessor == 1")
    assert rows[-1].startswith("occupancy_ratio,ratio,warps_active_pct / max_warps_pct")
    # every metric a rules file may name is listed (rules/default.yaml points users here)
    from ncu_classify.core.metrics import RULE_METRICS

    assert {row.split(",")[0] for row in rows[1:]} == set(RULE_METRICS)


def test_capture_with_failed_shapes_exits_5(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ncu_classify.cli.entry import run

    fakebin = ROOT / "tests" / "fakebin"
    monkeypatch.setenv("PATH", f"{fakebin}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(ROOT / "fixtures" / "fault_h200"))
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_1")
    out = tmp_path / "raw"
    shapes = ROOT / "fixtures" / "fault_h200" / "dit3.yaml"
    assert run(["capture", "--shapes", str(shapes), "-o", str(out)]) == 5
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["status"] for s in manifest["shapes"]] == ["ok", "failed", "failed"]
