"""A tries.json as careless hands leave it, read by `next --tries` and `report --tries`: a
version this tool does not know, cut short, not JSON, not UTF-8, a list, too large. Each is one
line naming the file, exit 3; older versions and a file without one read as they always did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cli.entry import run
from ncu_classify.core.errors import InputFileError
from ncu_classify.tries.results import TRIES_VERSION, load_results

VAE = ROOT / "fixtures" / "tries_h200" / "vae" / "tries.json"


def _with_version(tmp_path: Path, version: object) -> Path:
    """The H200's VAE tries.json with `schema_version` set (left out for None)."""
    data = json.loads(VAE.read_text())
    data.pop("schema_version")
    if version is not None:
        data["schema_version"] = version
    path = tmp_path / "tries.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("version", "why"),
    [
        ("2.0", "'2.0' is newer than the `try` results this tool reads (up to {v}): a newer"
                " ncu-classify wrote it"),
        ("1.9", "'1.9' is newer than the `try` results this tool reads (up to {v}): a newer"
                " ncu-classify wrote it"),
        ("1.0-rc", "'1.0-rc' is no version of the `try` results this tool reads (up to {v})"),
        (2, "2 is no version of the `try` results this tool reads (up to {v})"),
    ],
)  # fmt: skip
def test_a_version_this_tool_does_not_know_is_refused(
    tmp_path: Path, wan_file: Path, capsys: pytest.CaptureFixture[str], version: object, why: str
) -> None:
    path = _with_version(tmp_path, version)
    expected = f"{path}: schema_version " + why.format(v=TRIES_VERSION)
    with pytest.raises(InputFileError) as caught:
        load_results(path)
    assert str(caught.value) == expected
    for command in (
        ["next", str(wan_file)],
        ["report", str(wan_file), "-o", str(tmp_path / "p.md")],
    ):
        assert run([*command, "--tries", str(path)]) == 3
        assert capsys.readouterr().err == f"ncu-classify: error: {expected}\n"
    assert not (tmp_path / "p.md").exists()


@pytest.mark.parametrize("version", [None, "1.0", TRIES_VERSION])
def test_older_versions_and_none_read(tmp_path: Path, version: str | None) -> None:
    found = load_results(_with_version(tmp_path, version))
    assert len(found.moves) == 10 and found.stage_savings_us == {"vae": 115105.325}
    assert found.moves[0].alternatives[2].not_eligible is None  # 1.0: not written, compared


def _huge(path: Path) -> None:
    """Past the 64 MiB a tries.json may hold (thousands of moves are a few MB)."""
    with path.open("wb") as f:
        f.write(b'{"moves": [' + b"0, " * (23 << 20) + b"0]}")


@pytest.mark.parametrize(
    ("write", "why"),
    [
        (lambda p: p.write_bytes(VAE.read_bytes()[:5000]),
         "{p}:103:35: invalid JSON: Expecting ',' delimiter"),
        (lambda p: p.write_text("hello"), "{p}:1:1: invalid JSON: Expecting value"),
        (lambda p: p.write_bytes(b""), "{p}:1:1: invalid JSON: Expecting value"),
        (lambda p: p.write_bytes(b'\xff\xfe{"a": 1}'),
         "{p}:1:1: not UTF-8 text (byte 0xff); save the file as UTF-8"),
        (lambda p: p.write_text("[1, 2]"), "{p}: a JSON list, not a `try` result (an object)"),
        (lambda p: p.write_text("null"), "{p}: a JSON null, not a `try` result (an object)"),
        (lambda p: p.write_text("true"), "{p}: a JSON boolean, not a `try` result (an object)"),
        (lambda p: p.write_text("{}"), "{p}:1:1: not a `try` result: cards_file: Field required"
         " (and 6 more)"),
        (_huge, "{p}: larger than 64 MiB; not a file this tool reads"),
        (lambda p: p.mkdir(), "{p}: a folder; give the tries.json in it (it holds none: has its"
         " capture run?)"),
    ],
)  # fmt: skip
def test_a_broken_tries_file_is_one_line(
    tmp_path: Path, wan_file: Path, capsys: pytest.CaptureFixture[str], write: object, why: str
) -> None:
    """Was, for a list: `(top level): Input should be a valid dictionary or instance of
    TryResults`; for the tries folder: `cannot read: Is a directory`."""
    path = tmp_path / "tries.json"
    write(path)  # type: ignore[operator]
    for command in (
        ["next", str(wan_file)],
        ["report", str(wan_file), "-o", str(tmp_path / "p.md")],
    ):
        assert run([*command, "--tries", str(path)]) == 3
        assert capsys.readouterr().err == f"ncu-classify: error: {why.format(p=path)}\n"
    assert not (tmp_path / "p.md").exists()
