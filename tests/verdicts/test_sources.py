"""What classify reads and how inputs map to exit codes (hardening items 4, 8, 11, 12, 13):
folders searched recursively, reports that share a name kept apart, repeats read once, every
report kind, NaN as missing, and each bad input its own line with the rest processed."""

from __future__ import annotations

import json
import lzma
import os
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE, copied_capture

from ncu_classify.cli.entry import run
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

PUBLIC = ROOT / "fixtures" / "public"


def _plain(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(lzma.decompress(source.read_bytes()))
    return target


def test_folders_are_searched_recursively(tmp_path: Path, rules: LoadedRules) -> None:
    """A folder that holds only subfolders of reports is not "no report"; hidden folders (a
    capture's .work) are skipped; a capture folder is one source."""
    shutil.copy(PUBLIC / "mojo_gtx1660ti_2022.4.0.ncu-rep.xz", tmp_path)
    nested = tmp_path / "runs" / "a" / "b"
    nested.mkdir(parents=True)
    shutil.copy(PUBLIC / "speedy_scan_rtx3070_2020.3.1.ncu-rep.xz", nested)
    (tmp_path / "runs" / ".work").mkdir()
    shutil.copy(SMOKE / "dit.ncu-rep.xz", tmp_path / "runs" / ".work" / "dit.partial.ncu-rep.xz")
    shutil.copytree(SMOKE, tmp_path / "runs" / "capture")
    cards = classify([tmp_path], rules, jobs=1)
    assert cards.input_errors == [] and cards.input_warnings == []
    stages = [c.stage for c in cards.cards]
    assert stages[:4] == ["mojo_gtx1660ti_2022.4.0"] * 4
    assert "speedy_scan_rtx3070_2020.3.1" in stages
    assert [c.group for c in cards.cards if c.stage == "dit"] == [
        "dit:linear:M4680_N5120_K5120:bf16:bias",
        "dit:linear:M4680_N5120_K144:bf16:bias",
        "dit:linear:M3_N30720_K5120:bf16:bias",
    ]
    assert len(cards.cards) == 4 + 1 + 11  # no card from the hidden .work copy


def test_reports_with_the_same_name_stay_apart(tmp_path: Path, rules: LoadedRules) -> None:
    """Two different `profile.ncu-rep` (an RTX 3070 and an RTX 2080 Ti run) in one call: two
    stages, unique group ids, each card on its own GPU."""
    a = _plain(
        PUBLIC / "speedy_scan_rtx3070_2020.3.1.ncu-rep.xz", tmp_path / "runA" / "profile.ncu-rep"
    )
    b = _plain(
        PUBLIC / "cudacode_rtx2080ti_2022.3.0.ncu-rep.xz", tmp_path / "runB" / "profile.ncu-rep"
    )
    cards = classify([a, b], rules, jobs=1)
    assert [(c.stage, c.group, c.gpu.name) for c in cards.cards] == [
        ("runA/profile", "runA/profile:kernel", "NVIDIA GeForce RTX 3070"),
        ("runB/profile", "runB/profile:kernel_A", "NVIDIA GeForce RTX 2080 Ti"),
        ("runB/profile", "runB/profile:kernel_C", "NVIDIA GeForce RTX 2080 Ti"),
    ]
    assert sorted(cards.by_stage) == ["runA/profile", "runB/profile"]


def test_the_same_report_or_capture_twice_is_read_once(tmp_path: Path, rules: LoadedRules) -> None:
    """A capture claims its reports first: the same report also given alone adds nothing."""
    report = SMOKE / "dit.ncu-rep.xz"
    cards = classify([report, report, SMOKE, SMOKE], rules, jobs=1)
    assert cards.input_warnings == [  # named as from any folder (issue 37)
        "smoke_h200/manifest.json: the same capture given twice; read once",
        "dit.ncu-rep.xz: given more than once (alone, in a folder or by a link); read once",
        "dit.ncu-rep.xz: given more than once (alone, in a folder or by a link); read once",
    ]
    assert [c.group for c in cards.cards][:2] == [
        "dit:linear:M4680_N5120_K5120:bf16:bias",
        "dit:linear:M4680_N5120_K144:bf16:bias",
    ]
    assert len(cards.cards) == 11 and len(cards.cards[0].kernels) == 1
    copy = tmp_path / "copy"
    shutil.copytree(SMOKE, copy)
    twice = classify([SMOKE, copy], rules, jobs=1)
    assert "group 'dit:linear:M4680_N5120_K5120:bf16:bias' appears in 2 cards" in (
        twice.input_warnings
    )


def test_every_report_kind_is_read(rules: LoadedRules) -> None:
    """.ncu-repz (zstd, written by ncu 2026.3+) and .nsight-cuprof-report (ncu 2019)."""
    cards = classify(
        [
            PUBLIC / "dit_h200_2025.3.1.ncu-repz",
            PUBLIC / "physicell_v100_2019.nsight-cuprof-report.xz",
        ],
        rules,
        jobs=1,
    )
    assert cards.input_errors == []
    assert [c.summed_kernel_us for c in cards.cards[:3]] == [303.008, 25.088, 77.856]
    assert {c.gpu.name for c in cards.cards[3:]} == {"Tesla V100-PCIE-16GB"}
    assert sum(len(c.kernels) for c in cards.cards[3:]) == 30


def test_a_kernel_ncu_could_not_profile_is_all_missing(rules: LoadedRules) -> None:
    """Every metric of this A100 kernel is NaN in the report: missing, listed, never a value."""
    (card,) = classify([PUBLIC / "mistic_a100_2022.4.0_unprofiled.ncu-rep.xz"], rules, jobs=1).cards
    kernel = card.kernels[0]
    assert all(value is None for value in kernel.metrics.values())
    assert set(kernel.missing_metrics) == set(kernel.metrics) and kernel.metric_sources == {}
    assert set(card.missing_metrics) == set(kernel.metrics)
    assert card.summed_kernel_us is None and card.primary is None


def test_bad_inputs_among_good_ones_exit_4_and_the_rest_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo.ncu-rep"
    os.mkfifo(fifo)
    (tmp_path / "dangling.ncu-rep").symlink_to(tmp_path / "gone.ncu-rep")
    (tmp_path / "empty").mkdir()
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())[:400_000])
    out = tmp_path / "cards.json"
    argv = ["classify", str(fifo), str(tmp_path / "dangling.ncu-rep"), str(tmp_path / "empty"),
            str(cut), str(SMOKE / "dit.ncu-rep.xz"), "-o", str(out)]  # fmt: skip
    assert run(argv) == 4
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("ncu-classify: e")]
    assert errors == [
        f"ncu-classify: error: {fifo}: cannot read: a FIFO (named pipe), not a regular file",
        f"ncu-classify: error: {tmp_path / 'dangling.ncu-rep'}: cannot read: a symbolic link to"
        " a file or folder that does not exist",
        f"ncu-classify: error: {tmp_path / 'empty'}: folder holds no Nsight Compute report"
        " (searched recursively)",
        f"ncu-classify: error: {cut}: truncated: block header at byte 145 announces a"
        " 2804554-byte payload at byte 197 but the file ends at byte 400000",
    ]
    doc = json.loads(out.read_text())
    assert [c["group"] for c in doc["cards"]] == [
        "dit:linear:M4680_N5120_K5120:bf16:bias",  # a capture report alone keeps its ids
        "dit:linear:M4680_N5120_K144:bf16:bias",
        "dit:linear:M3_N30720_K5120:bf16:bias",
    ]
    assert len(doc["input_errors"]) == 4


def test_truncated_report_in_a_capture_folder_is_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def plain_reports(manifest: dict) -> None:
        for batch in manifest["batches"]:
            batch["report"] = batch["report"].replace(".ncu-rep.xz", ".ncu-rep")

    capture = copied_capture(tmp_path, plain_reports)
    data = lzma.decompress((SMOKE / "vae.ncu-rep.xz").read_bytes())
    (capture / "vae.ncu-rep.xz").unlink()
    (capture / "vae.ncu-rep").write_bytes(data[: len(data) * 7 // 10])
    out = tmp_path / "cards.json"
    assert run(["classify", str(capture), "-o", str(out)]) == 4
    err = capsys.readouterr().err
    assert f"ncu-classify: error: {capture / 'vae.ncu-rep'}: truncated: " in err
    cards = json.loads(out.read_text())["cards"]
    vae = [c for c in cards if c["stage"] == "vae"]
    assert [c["status"] for c in vae] == ["failed"] * 3
    assert vae[0]["error"].startswith(f"its report could not be read: {capture.name}/vae.ncu-rep: ")
    assert not any(c["group"].endswith(":None") for c in cards)  # no phantom card


def test_an_invalid_manifest_is_exit_3_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = copied_capture(tmp_path, lambda m: m["shapes"][2].update(status="done"))
    out = tmp_path / "cards.json"
    assert run(["classify", str(capture), str(SMOKE / "dit.ncu-rep.xz"), "-o", str(out)]) == 3
    assert capsys.readouterr().err == (
        f"ncu-classify: error: {capture / 'manifest.json'}:1:9074: manifest field shapes.2.status:"
        " Input should be 'pending', 'ok' or 'failed'\n"
    )
    assert not out.exists()


def test_summary_by_shape_says_why_a_shape_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cards = tmp_path / "cards.json"
    assert run(["classify", str(SMOKE), "-o", str(cards)]) == 0
    capsys.readouterr()
    assert run(["summary", str(cards), "--by", "shape", "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == (
        "stage,group,primary,status,calls,kernel_us_per_call,kernel_us_per_inference,"
        "dominant_kernel,problem,stability"
    )
    assert len(rows) == 12
    assert rows[10] == (
        "attention,attention:flash_attn:self_b1_h40_d128_q4680_k4680of29640:bf16,failed,failed,"
        "1,,,,unsupported: backend flash_attn is not importable here: No module named 'flash_attn',"
    )


def test_inputs_are_named_alike_from_any_folder(
    tmp_path: Path, rules: LoadedRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`classify .` inside a folder and `classify s` beside it store the same names (issue 37):
    `.` and `..` are named by the folder they are, every path below them alike, and a file
    name that is not UTF-8 the same whether given with folders in front or not."""
    s = tmp_path / "s"
    shutil.copytree(SMOKE, s)
    (s / "sub").mkdir()
    shutil.copy(SMOKE / "dit.ncu-rep.xz", s / "sub")
    shutil.copy(
        ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz", s / "extra.ncu-rep.xz"
    )
    beside = classify([s], rules, jobs=1)
    monkeypatch.chdir(s)
    inside = classify([Path(".")], rules, jobs=1)
    monkeypatch.chdir(s / "sub")
    above = classify([Path("..")], rules, jobs=1)
    expected = [
        "s/sub: 1 report inside the capture folder s, which is read by its manifest.json: not"
        " read (give this folder itself to read them)",
        "s/extra.ncu-rep.xz: in the capture folder but not named by its manifest.json: read as"
        " a loose report, its cards beside the capture's",
    ]
    for cards in (beside, inside, above):
        assert cards.inputs == ["s"] and cards.input_warnings == expected
    odd = os.fsencode(tmp_path / "nu2" / "sub") + b"/c\xfe.ncu-rep"
    os.makedirs(os.path.dirname(odd))
    with open(odd, "wb") as handle:
        handle.write(b"not a report")
    monkeypatch.chdir(tmp_path)
    given_deep = classify([Path(os.fsdecode(b"nu2/sub/c\xfe.ncu-rep"))], rules, jobs=1)
    monkeypatch.chdir(tmp_path / "nu2" / "sub")
    given_here = classify([Path(os.fsdecode(b"c\xfe.ncu-rep"))], rules, jobs=1)
    assert given_deep.input_errors == given_here.input_errors
    assert given_here.input_errors[0].startswith("c\\xfe.ncu-rep: ")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bad_input_has_one_line(tmp_path: Path, rules: LoadedRules, jobs: int) -> None:
    """A device, a FIFO and a dangling link named as reports, each given alone and in the
    folder searched (the link twice): one line each, in one wording (issue 37)."""
    hx = tmp_path / "hx"
    hx.mkdir()
    shutil.copy(ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz", hx)
    (hx / "zero.ncu-rep").symlink_to("/dev/zero")
    os.mkfifo(hx / "fifo.ncu-rep")
    (hx / "dangle.ncu-rep").symlink_to(tmp_path / "nowhere")
    bad = [hx / "zero.ncu-rep", hx / "fifo.ncu-rep", hx / "dangle.ncu-rep"]
    cards = classify([hx, *bad, bad[2], tmp_path / "gone.ncu-rep"] * 2, rules, jobs=jobs)
    assert cards.input_errors == [
        "dangle.ncu-rep: cannot read: a symbolic link to a file or folder that does not exist",
        "fifo.ncu-rep: cannot read: a FIFO (named pipe), not a regular file",
        "zero.ncu-rep: cannot read: a character device, not a regular file",
        "gone.ncu-rep: no such file or folder",
    ]
    assert len(cards.cards) == 4


def test_a_report_named_as_the_overall_row_is_labelled_by_its_file_name(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """`(all stages).ncu-rep.xz` would make a stage labelled as next's overall row (issue 37):
    its stage is the file's name; a stem in parentheses is never a stage."""
    report = tmp_path / "(all stages).ncu-rep.xz"
    shutil.copy(ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz", report)
    cards = classify([report], rules, jobs=1)
    assert {c.stage for c in cards.cards} == {"(all stages).ncu-rep.xz"}
    assert sorted(cards.by_stage) == ["(all stages).ncu-rep.xz"]
    assert cards.cards[0].group.startswith("(all stages).ncu-rep.xz:")
