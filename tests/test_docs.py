"""The README and the commands' help kept equal to the code: the command list, every example
(in the help and in the README) accepted by the command's own parser, every option the README
shows one the command has, and the exit-code table the one of `cli.app.EXIT_TABLE`."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import typer.main
from helpers import ROOT

from ncu_classify.cli.app import EXIT_TABLE
from ncu_classify.cli.entry import app, run

README = (ROOT / "README.md").read_text()
GROUP = typer.main.get_command(app)  # typer bundles its own click: no isinstance
COMMANDS: dict[str, Any] = dict(GROUP.commands)  # type: ignore[attr-defined]


def _section(title: str) -> str:
    """The README text under `## title` / `### title`, up to the next heading of that level."""
    match = re.search(rf"^(#+) {re.escape(title)}\n(.*?)(?=^\1 |\Z)", README, re.M | re.S)
    assert match, f"README has no section {title!r}"
    return match.group(2)


def _readme_command_lines() -> list[str]:
    """Every command line of the README's code blocks that runs the tool (continuation lines
    and wrapped options joined, `a && ncu-classify ...` split)."""
    lines, inside, joined = [], False, ""
    for raw in README.splitlines():
        if raw.strip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            continue
        if raw.strip().startswith("[") and lines and not joined:  # wrapped options
            lines[-1] += " " + raw.strip()
            continue
        joined += raw.strip()
        if joined.endswith("\\"):
            joined = joined[:-1] + " "
            continue
        for part in joined.split("&&"):
            if part.strip().startswith("ncu-classify "):
                lines.append(part.strip())
        joined = ""
    return lines


def _options(command: Any) -> set[str]:
    return {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}


def _help_examples(name: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert run([name, "--help"]) == 0
    text = capsys.readouterr().out
    assert "Examples:" in text, f"`{name} --help` shows no example"
    tail = text.split("Examples:", 1)[1]
    return [line.strip() for line in tail.splitlines() if line.strip()]


def test_the_readme_lists_every_command_and_only_those() -> None:
    block = _section("Commands")
    listed = {line.split()[1] for line in block.splitlines() if line.startswith("ncu-classify ")}
    assert listed - {"--version"} == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_has_examples_its_parser_takes(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = _help_examples(name, capsys)
    assert examples
    for example in examples:
        words = shlex.split(example)
        assert words[:2] == ["ncu-classify", name], example
        with COMMANDS[name].make_context(name, words[2:]) as ctx:  # raises on a bad option
            assert ctx.params


def _readme_options(line: str) -> tuple[str, list[str]]:
    """(command, the options a README line shows), bracket and alternative notation removed;
    what follows `--` belongs to the recorded program."""
    words = shlex.split(line.split(" #", 1)[0])
    name, rest = words[1], words[2:]
    if "--" in rest:
        rest = rest[: rest.index("--")]
    shown = []
    for word in rest:
        for part in word.strip("[]").split("|"):
            option = part.strip("[].").split("=", 1)[0]
            if option.startswith("-") and option != "-":
                shown.append(option)
    return name, shown


def test_every_option_the_readme_shows_is_one_the_command_has() -> None:
    lines = _readme_command_lines()
    assert len(lines) >= 15  # the README shows the tool at work: this test must see it
    for line in lines:
        name, shown = _readme_options(line)
        if name == "--version":
            continue
        assert name in COMMANDS, line
        unknown = [o for o in shown if o not in _options(COMMANDS[name])]
        assert unknown == [], f"README: {line}"


def test_the_readme_exit_code_table_is_the_code_s() -> None:
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", _section("Exit codes"), re.M)
    assert [int(code) for code, _ in rows] == [code for code, _ in EXIT_TABLE]
    for (code, meaning), (_, summary) in zip(rows, EXIT_TABLE, strict=True):
        assert meaning.startswith(summary), f"exit {code}: README says {meaning!r}"


def test_the_help_states_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for code, summary in EXIT_TABLE:
        assert f"{code} {summary}" in text
