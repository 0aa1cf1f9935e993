"""Bad input is one line, a documented exit code, bounded work, never a traceback (hardening
items 3 and 5): encodings, control characters, nesting, aliases, markup, sizes, types."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE

from ncu_classify.cli.entry import run

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

CARDS = ROOT / "fixtures" / "workload_h200_480x832_40heads" / "cards.json"
RULES = (ROOT / "rules" / "default.yaml").read_text()
SHAPES = "stages:\n  dit:\n    - {op: linear, M: 8, N: 8, K: 8}\n"


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("ncu-classify: error: ") and "Traceback" not in err
    return err.strip()


def _classify_with_rules(rules: Path, tmp_path: Path) -> int:
    return run(["classify", str(SMOKE / "dit.ncu-rep.xz"), "-o", str(tmp_path / "c.json"),
                "--rules", str(rules)])  # fmt: skip


def _dry_run(shapes: Path, tmp_path: Path) -> int:
    return run(["capture", "--shapes", str(shapes), "-o", str(tmp_path / "raw"), "--dry-run"])


def test_rules_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_bytes(RULES.encode().replace(b"id: legacy-v1", b"id: legacy-\xff1"))
    assert _classify_with_rules(rules, tmp_path) == 3
    line = RULES[: RULES.index("id: legacy-v1")].count("\n") + 1
    assert _one_error(capsys) == (
        f"ncu-classify: error: {rules}:{line}:12: not UTF-8 text (byte 0xff); save the file as"
        " UTF-8"
    )
    assert not (tmp_path / "c.json").exists()


def test_shapes_with_a_control_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "s.yaml"
    shapes.write_text(SHAPES.replace("K: 8", "K: 8\x01"))
    assert _dry_run(shapes, tmp_path) == 3
    assert _one_error(capsys) == (
        f"ncu-classify: error: {shapes}:3:36: invalid YAML: character #x0001 is not allowed"
        " (control character)"
    )


def test_cards_not_utf8_or_with_raw_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "c.json"
    bad.write_bytes(b'{"cards": [], "x": "\xc3\x28"}')
    assert run(["summary", str(bad)]) == 3
    assert _one_error(capsys).endswith(
        f"{bad}:1:21: not UTF-8 text (byte 0xc3); save the file as UTF-8"
    )
    bad.write_bytes(b'{"cards": [], "x": "a\x07b"}')
    assert run(["summary", str(bad)]) == 3
    assert "invalid JSON: Invalid control character at" in _one_error(capsys)


def test_escape_sequences_and_markup_in_names_print_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage named `model[fp16]` shows as such (rich ate `[fp16]`), `[/b]` breaks nothing,
    and an ESC sequence from a file is shown escaped instead of driving the terminal."""
    monkeypatch.setenv("COLUMNS", "160")  # wide enough that the escaped name is not folded
    doc = json.loads(CARDS.read_text())
    doc["cards"][0]["stage"] = "model[fp16]"
    doc["cards"][1]["stage"] = "[/b]"
    doc["cards"][2]["stage"] = "\x1b]0;owned\x07red"
    cards = tmp_path / "c.json"
    cards.write_text(json.dumps(doc))
    assert run(["summary", str(cards)]) == 0
    table = capsys.readouterr().out
    assert "│ [model[fp16]] " in table and "│ [[/b]] " in table  # a row naming each stage
    assert run(["summary", str(cards), "--by", "shape", "--csv"]) == 0
    csv = capsys.readouterr().out
    assert "\x1b" not in table + csv
    assert "\\x1b]0;owned" in table and "\\x1b]0;owned\\x07red" in csv
    assert "…" not in table  # long cells fold, never lose their end


def test_deep_yaml_nesting_is_refused_quickly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for text in ("stages: " + "[" * 20000 + "]" * 20000, "a:\n" + "".join(
        " " * i + "- \n" for i in range(1, 1500)
    )):  # fmt: skip
        shapes = tmp_path / "s.yaml"
        shapes.write_text(text)
        began = time.monotonic()
        assert _dry_run(shapes, tmp_path) == 3
        assert time.monotonic() - began < 10
        assert "nested deeper than 32 levels" in _one_error(capsys)


def test_deep_json_nesting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cards = tmp_path / "c.json"
    cards.write_text('{"cards": ' + "[" * 100000 + "]" * 100000 + "}")
    assert run(["summary", str(cards)]) == 3
    assert _one_error(capsys) == f"ncu-classify: error: {cards}: nested too deeply to read"


def test_alias_bomb_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """743 bytes that expand to 9^9 scalars kept classify validating for 30 s and 2.3 GB."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for n in range(1, 9):
        lines.append(f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]")
    rules = tmp_path / "bomb.yaml"
    rules.write_text("\n".join(lines) + "\n" + RULES)
    assert len(rules.read_bytes()) - len(RULES) < 800
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.monotonic()
    assert _classify_with_rules(rules, tmp_path) == 3
    assert time.monotonic() - began < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200_000  # KiB
    assert _one_error(capsys) == (
        f"ncu-classify: error: {rules}:2:10: YAML aliases (*a0) are not allowed here; write"
        " the value out"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("true", "Input should be a valid integer"),
        ('"5"', "Input should be a valid integer"),
        ("5.0", "Input should be a valid integer"),
        ("0", "Input should be greater than 0"),
    ],
)
def test_shape_numbers_are_strict(
    value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "s.yaml"
    shapes.write_text(SHAPES.replace("M: 8", f"M: {value}"))
    assert _dry_run(shapes, tmp_path) == 3
    assert _one_error(capsys) == (f"ncu-classify: error: {shapes}:3:20: stages.dit.0.M: {message}")


def test_rules_value_true_is_not_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text(RULES.replace("value: 60}", "value: true}", 1))
    assert _classify_with_rules(rules, tmp_path) == 3
    assert "Input should be a valid number" in _one_error(capsys)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom"])
def test_endless_inputs_are_refused_as_devices(
    path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _classify_with_rules(Path(path), tmp_path) == 3
    assert _one_error(capsys) == (
        f"ncu-classify: error: {path}: cannot read: a character device, not a regular file"
    )


def test_folder_or_missing_file_as_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _classify_with_rules(tmp_path, tmp_path) == 3
    assert _one_error(capsys) == f"ncu-classify: error: {tmp_path}: cannot read: Is a directory"
    assert _classify_with_rules(tmp_path / "none.yaml", tmp_path) == 3
    assert "none.yaml: cannot read: No such file or directory" in _one_error(capsys)


def test_newline_in_a_file_name_stays_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "two\nlines.json"
    odd.write_text("{")
    assert run(["summary", str(odd)]) == 3
    assert "two\\x0alines.json:1:2: invalid JSON" in _one_error(capsys)


def test_a_bug_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ncu_classify.present import schema

    def broken() -> str:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(schema, "cards_schema_text", broken)
    monkeypatch.delenv("NCU_CLASSIFY_DEBUG", raising=False)
    assert run(["schema"]) == 1
    assert _one_error(capsys) == (
        "ncu-classify: error: internal error: ZeroDivisionError: division by zero (a bug: rerun"
        " with NCU_CLASSIFY_DEBUG=1 for the traceback and report it)"
    )
    monkeypatch.setenv("NCU_CLASSIFY_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        run(["schema"])
