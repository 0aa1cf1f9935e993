"""The CLI as its help, the README and docs/ describe it: -h, no command, flags without values, the
format policy of -o, Parquet without pyarrow, a reader that leaves the pipe, the schema the
README names."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CLI, ROOT, SMOKE

from ncu_classify.cards.model import SCHEMA_VERSION
from ncu_classify.cli.entry import app, run
from ncu_classify.present.page import MAX_FILES

CARDS = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
COMMANDS = sorted(c.name or c.callback.__name__ for c in app.registered_commands)  # type: ignore[union-attr]
DOCS = "\n".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))


def _out_err(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_no_command_prints_the_help_and_no_empty_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run([]) == 2
    out, err = _out_err(capsys)
    assert out.startswith("Usage: ncu-classify [OPTIONS] COMMAND [ARGS]...")
    assert all(f"  {name} " in out for name in COMMANDS)
    assert err == ""


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)])
def test_dash_h_is_help_and_flags_take_no_value(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([*command, "-h"]) == 0
    short, _ = _out_err(capsys)
    assert run([*command, "--help"]) == 0
    long, _ = _out_err(capsys)
    assert short == long and "Usage: ncu-classify" in short
    assert "<bool>" not in short  # a flag shown as if it took a value
    assert "-h, --help" in short


def test_a_flag_given_a_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["summary", str(CARDS), "--csv=yes"]) == 2
    assert _out_err(capsys)[1] == (
        "ncu-classify: error: Option '--csv' does not take a value. (see --help)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", str(CARDS), "-o", "x.pdf"], "-o x.pdf: .pdf is not a format this command"),
        (["summary", str(CARDS), "-o", "x.html"], "-o x.html: .html is not a format"),
        (["diff", str(CARDS), str(CARDS), "-o", "x.pdf"], "-o x.pdf: .pdf is not a format"),
        (["diff", str(CARDS), str(CARDS), "--format", "csv", "-o", "x.parquet"], "names a .parq"),
        (["report", str(CARDS), "--format", "md", "-o", "x.html"], "-o x.html names a .html"),
        (["summary", str(CARDS), "--csv", "-o", "x.parquet"], "--format csv but -o x.parquet"),
    ],
)
def test_a_suffix_that_names_another_format_writes_nothing(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(argv) == 2
    assert message in _out_err(capsys)[1]
    assert list(tmp_path.iterdir()) == []


def test_text_suffixes_take_the_table(tmp_path: Path) -> None:
    target = tmp_path / "summary.txt"
    assert run(["summary", str(CARDS), "-o", str(target)]) == 0
    assert "dit" in target.read_text() and not target.read_text().startswith("stage,")


def test_the_report_says_how_many_files_it_overlays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copies = []
    for index in range(MAX_FILES + 1):
        copies.append(tmp_path / f"c{index}.json")
        copies[-1].write_bytes(CARDS.read_bytes())
    assert run(["report", *map(str, copies), "-o", str(tmp_path / "r.html")]) == 2
    assert f"a report overlays at most {MAX_FILES}" in _out_err(capsys)[1]
    assert f"Up to {MAX_FILES} files are overlaid" in DOCS


def test_parquet_without_pyarrow_is_exit_6_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    cards, table = tmp_path / "cards.json", tmp_path / "cards.parquet"
    argv = ["classify", str(SMOKE), "-o", str(cards), "--table", str(table)]
    assert run(argv) == 6
    assert _out_err(capsys)[1] == (
        "ncu-classify: error: Parquet needs pyarrow, which is not installed: pip install"
        " 'ncu-classify[parquet]' (or pyarrow); nothing was written\n"
    )
    assert list(tmp_path.iterdir()) == []
    assert run(["summary", str(CARDS), "-o", str(tmp_path / "s.parquet")]) == 6
    assert run(["diff", str(CARDS), str(CARDS), "-o", str(tmp_path / "d.parquet")]) == 6
    assert list(tmp_path.iterdir()) == []


def _reader_leaves(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI with its stdout a pipe whose reader is gone before anything is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [*CLI, *argv],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
    finally:
        os.close(write)


def test_a_reader_that_leaves_the_pipe_leaves_the_command_its_own_exit_code(
    tmp_path: Path,
) -> None:
    done = _reader_leaves(["summary", str(CARDS), "--by", "shape"])
    assert (done.returncode, done.stderr) == (0, "")
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"not a report")
    done = _reader_leaves(["classify", str(SMOKE / "dit.ncu-rep.xz"), str(bad), "-o", "-"])
    assert done.returncode == 4
    assert done.stderr.splitlines()[0] == (
        f"ncu-classify: error: {bad}: not an Nsight Compute report (bad file header)"
    )
    gate = ["diff", "fixtures/legacy/legacy_cards_480x832.json", str(CARDS), "--fail-on", "any"]
    done = _reader_leaves(gate)
    assert done.returncode == 8 and "ncu-classify: error:" in done.stderr.splitlines()[-1]


def test_the_readme_names_the_schema_the_files_carry() -> None:
    named = set(re.findall(r"^Schema (\d+\.\d+) \(one typed model", DOCS, re.M))
    assert named == {SCHEMA_VERSION}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["classify", str(SMOKE), "-o", "cards.csv"], "writes JSON, but .csv names CSV"),
        (["reclassify", str(CARDS), "-o", "cards.HTML"], "writes JSON, but .html names HTML"),
        (["schema", "-o", "schema.md"], "writes JSON, but .md names Markdown"),
        (["reclassify", str(CARDS), "-o", "cards.pdf"], "writes JSON, but .pdf names PDF"),
        (["record", "-o", "shapes.json", "--", "python", "x.py"], "writes YAML, but .json"),
    ],
)
def test_a_file_is_never_written_under_another_kinds_name(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("print('ran')\n")
    assert run(argv) == 2
    assert message in _out_err(capsys)[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.py"]
