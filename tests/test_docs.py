"""The README, the pages of docs/ and the commands' help kept equal to the code: the command
list, every example (in the help, the README and docs/) accepted by the command's own parser,
every option they show one the command has and every option of a command shown in docs/, the
exit-code table the one of `cli.app.EXIT_TABLE`; the README a front door (at most 250 lines,
the card guide one click from its top, every link it and docs/ make leading to a file and a
heading that exist); every package face naming every module of its package, and the module map
of docs/development.md the one tests/module_map.py writes from those faces."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import module_map
import pytest
import typer.main
from helpers import ROOT

from ncu_classify.cli.app import EXIT_TABLE
from ncu_classify.cli.entry import app, run

README = (ROOT / "README.md").read_text()
PAGES = {path: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}
DOCS = "\n".join(PAGES.values())
LINKED = {
    ROOT / "README.md": README,
    ROOT / "CHANGELOG.md": (ROOT / "CHANGELOG.md").read_text(),
    **PAGES,
}
GROUP = typer.main.get_command(app)  # typer bundles its own click: no isinstance
COMMANDS: dict[str, Any] = dict(GROUP.commands)  # type: ignore[attr-defined]


def _section(title: str) -> str:
    """The README text under `## title` / `### title`, up to the next heading of that level."""
    match = re.search(rf"^(#+) {re.escape(title)}\n(.*?)(?=^\1 |\Z)", README, re.M | re.S)
    assert match, f"README has no section {title!r}"
    return match.group(2)


def _command_lines(text: str) -> list[str]:
    """Every command line of a page's code blocks that runs the tool (continuation lines
    and wrapped options joined, `a && ncu-classify ...` split), and every `ncu-classify ...`
    code span of a table row (the README's command table)."""
    lines, inside, joined = [], False, ""
    for raw in text.splitlines():
        if not inside and raw.startswith("|"):
            lines += [s for s in re.findall(r"`([^`]+)`", raw) if s.startswith("ncu-classify ")]
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


def _doc_command_lines() -> list[str]:
    """The command lines of the README and of every page of docs/."""
    return [line for text in (README, *PAGES.values()) for line in _command_lines(text)]


def test_the_readme_lists_every_command_and_only_those() -> None:
    row = r"^\| `([\w-]+)` \| .+ \| `(ncu-classify [^`]+)` \|$"
    rows = re.findall(row, _section("Commands"), re.M)
    assert len(rows) == len({name for name, _ in rows})  # each command once
    assert {name for name, _ in rows} == set(COMMANDS)
    for name, example in rows:  # each row's example runs its own command
        assert example.split()[1] == name, example


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


def test_every_option_the_docs_show_is_one_the_command_has() -> None:
    lines = _doc_command_lines()
    assert len(lines) >= 35  # the README and docs/ show the tool at work: this test must see it
    for line in lines:
        name, shown = _readme_options(line)
        if name == "--version":
            continue
        assert name in COMMANDS, line
        unknown = [o for o in shown if o not in _options(COMMANDS[name])]
        assert unknown == [], f"docs: {line}"


def test_every_readme_and_docs_example_is_one_its_parser_takes() -> None:
    """Each command line shown whole (no `[...]` notation, no placeholder in capitals) parses."""
    checked = 0
    for line in _doc_command_lines():
        words = shlex.split(line.split(" #", 1)[0])
        if words[1] == "--version" or any(
            w.startswith("[") or "|" in w or "..." in w or re.fullmatch(r"[A-Z][A-Z0-9_.]*", w)
            for w in words
        ):
            continue
        with COMMANDS[words[1]].make_context(words[1], words[2:]) as ctx:  # raises on a bad option
            assert ctx.params is not None
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_a_command_is_documented_in_docs(name: str) -> None:
    shown = {o for line in _doc_command_lines() for o in _readme_options(line)[1]}
    named = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", DOCS))
    missing = [  # an option counts as named by any of its spellings (-o, --output, --no-x)
        p.opts
        for p in COMMANDS[name].params
        if p.param_type_name == "option" and not {*p.opts, *p.secondary_opts} & (shown | named)
    ]
    assert missing == [], f"{name}: options no page of docs/ names"


def test_the_readme_is_a_front_door() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    assert "(docs/reading-a-card.md)" in "\n".join(lines[:15])  # one click from the top
    titles = re.findall(r"^## (.+)$", PAGES[ROOT / "docs" / "reading-a-card.md"], re.M)
    assert "What bounds this kernel?" in titles and not any("schema" in t.lower() for t in titles)


def _anchor(title: str) -> str:
    """The anchor GitHub gives a heading."""
    title = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
    return title.replace(" ", "-")


@pytest.mark.parametrize("page", sorted(LINKED), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_leads_to_a_file_and_heading_that_exist(page: Any) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", LINKED[page]):
        if re.match(r"https?:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: {target}"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", dest.read_text(), re.M)
            assert anchor in {_anchor(h) for h in headings}, f"{page.name}: {target}"


@pytest.mark.parametrize(
    "package",
    module_map.packages(),
    ids=lambda p: p.name,
)
def test_every_package_face_names_every_module(package: Any) -> None:
    assert module_map.modules(package)
    assert module_map.unnamed(package) == [], f"{package.name}/__init__.py leaves them out"


def test_the_module_map_in_docs_is_the_one_the_faces_give() -> None:
    page = PAGES[module_map.PAGE]
    assert module_map.page_map(page) == module_map.module_map(), "run python tests/module_map.py"


def test_the_readme_exit_code_table_is_the_code_s() -> None:
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", _section("Exit codes"), re.M)
    details = re.findall(
        r"^\| (\d+) \| (.+?) \|$", PAGES[ROOT / "docs" / "outputs-and-errors.md"], re.M
    )  # the page of details: the same codes, each meaning in full
    assert [int(code) for code, _ in details] == [code for code, _ in EXIT_TABLE]
    for (code, meaning), (_, summary) in zip(details, EXIT_TABLE, strict=True):
        assert meaning.startswith(summary), f"exit {code}: docs say {meaning!r}"
    assert [int(code) for code, _ in rows] == [code for code, _ in EXIT_TABLE]
    for (code, meaning), (_, summary) in zip(rows, EXIT_TABLE, strict=True):
        assert meaning.startswith(summary), f"exit {code}: README says {meaning!r}"


def test_the_help_states_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for code, summary in EXIT_TABLE:
        assert f"{code} {summary}" in text


def test_the_card_guide_s_example_is_the_fixture_s_card() -> None:
    """The card the guide reads field by field says what the committed cards file says."""
    cards = json.loads((ROOT / "fixtures" / "workload_h200_480x832" / "cards.json").read_text())
    card, guide = cards["cards"][0], PAGES[ROOT / "docs" / "reading-a-card.md"]
    kernel = card["kernels"][0]
    margin = kernel["margin"]
    facts = [
        f"`{card['group']}`, `{card['stage']}`",
        f"`{card['dominant_kernel']}`, {card['summed_kernel_us']}",
        f"`{card['primary']}`, `{card['status']}`",
        f"`l2_pct` {kernel['evidence']['l2_pct']:.1f}",
        f"`{margin['alternative']}`, {margin['alternative_distance']:.2f} points",
        f"compute roof {kernel['roofline']['roof_tflops']:.1f}, "
        f"{kernel['roofline']['pct_of_roof']:.1f} % of it",
    ]
    assert [fact for fact in facts if fact not in guide] == []


def test_ci_runs_the_readme_s_test_command() -> None:
    """`.ci/run` ends with the pytest command of the README's Tests block (its environment
    variables only turn skips into failures)."""
    block = re.search(r"```\n(.*?)\n```", _section("Tests"), re.S)
    assert block, "the README's Tests section has no command block"
    readme_pytest = block.group(1).split("&&")[-1].strip()
    ci_lines = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci_lines[-1].strip() == readme_pytest
