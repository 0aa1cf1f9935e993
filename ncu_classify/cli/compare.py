"""`ncu-classify diff`: compare two cards files (the CLI layer; the work is in `diff`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import GateFailed, UsageError
from ..core.ordering import natural_key
from ..core.paths import short_names
from ..core.text import printable
from ..present.tables import DIFF_SUFFIXES, PAGE_SUFFIXES, TEXT_SUFFIXES, output_format
from .app import CardsArgument, app, check_inputs, check_output, errors, examples, human, read_cards
from .terminal import out, warning_line

if TYPE_CHECKING:
    from ..present.diff_text import DiffFormat


@app.command(
    "diff",
    epilog=examples(
        "ncu-classify diff base.json cand.json",
        "ncu-classify diff base.json cand.json -o diff.md --fail-on flip --fail-on slower:10",
    ),
)
def diff_command(
    baseline: CardsArgument,
    candidate: Annotated[
        Path, typer.Argument(help="cards JSON to compare against BASELINE", readable=False)
    ],
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="write to this file; - for stdout")
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="table, md, json, csv or parquet (default: from the -o suffix, else table)",
        ),
    ] = None,
    reclassify: Annotated[
        Path | None,
        typer.Option(
            "--reclassify", help="judge both sides under this rules YAML first", readable=False
        ),
    ] = None,
    noise: Annotated[
        Path | None,
        typer.Option(
            "--noise", help="noise tolerances YAML (default: measured on H200s)", readable=False
        ),
    ] = None,
    stage: Annotated[
        list[str] | None, typer.Option("--stage", help="compare only this stage (repeatable)")
    ] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on", help="exit 8 if: flip, slower:PCT or any (repeatable; beyond noise)"
        ),
    ] = None,
    allow_inconclusive: Annotated[
        bool,
        typer.Option(
            help="with --fail-on: pass shapes whose repeated intervals cannot rule out a change"
        ),
    ] = False,
) -> None:
    """Compare CANDIDATE with BASELINE shape by shape: flipped verdicts and the threshold each
    crossed, changed kernels, time ratios, per-stage roll-up; noise is told apart."""
    from ..compare.diff import DiffOptions, diff_cards
    from ..compare.gate import failures, parse_condition
    from ..compare.sides import readable_rules, rules_places
    from ..core.noise import load_noise
    from ..present.diff_text import diff_parquet, diff_renderable, diff_text
    from ..verdicts.rules import load_rules

    with errors():
        conditions = [parse_condition(text) for text in fail_on or []]
        if allow_inconclusive and not conditions:
            raise UsageError("--allow-inconclusive relaxes a gate: it needs --fail-on")
        inputs = [baseline, candidate, *(p for p in (reclassify, noise) if p)]
        target = check_output(output, inputs) if output is not None else None
        check_inputs(inputs)
        fmt = output_format(fmt, output, DIFF_SUFFIXES, "table", neutral=TEXT_SUFFIXES)
        if fmt == "parquet" and output in (None, "-"):
            raise UsageError("--format parquet writes a binary file: give it with -o FILE")
        sides = read_cards(baseline), read_cards(candidate)
        stages = frozenset(stage or [])
        _check_stages(stages, {c.stage for side in sides for c in side.cards})
        places = [] if reclassify else rules_places(sides[0], baseline)
        if target is not None:  # the rules files the cards name may be read too
            target = check_output(output or "-", [*inputs, *places])
        options = DiffOptions(
            noise=load_noise(noise)[0],
            rules=load_rules(reclassify) if reclassify else None,
            known_rules=() if reclassify else readable_rules(sides[0], places),
            stages=stages,
        )
        names = short_names([baseline, candidate])
        result = diff_cards(*sides, (names[0], names[1]), options)
        form: DiffFormat = fmt  # type: ignore[assignment]
        if target is None and form == "table":
            out.print(diff_renderable(result))
        else:
            for warning in result.warnings:
                warning_line(warning)
            # data formats reach stdout byte for byte as they would reach a file
            sink = target or check_output("-", [])
            if form == "parquet":
                sink.write_bytes(diff_parquet(result))
            else:
                sink.write_text(diff_text(result, form))
            if target is not None and not target.is_stdout:
                human(target).print(f"wrote the comparison to {printable(str(target))}")
        problems = failures(result, conditions, allow_inconclusive)
        if problems:
            raise GateFailed("; ".join(problems))


def _check_stages(asked: frozenset[str], present: set[str]) -> None:
    missing = sorted(asked - present, key=natural_key)
    if missing:
        listed = ", ".join(sorted(present, key=natural_key))
        raise UsageError(f"--stage {missing[0]!r} is in neither file (stages: {listed})")


@app.command(
    "report",
    epilog=examples(
        "ncu-classify report cards.json -o report.html",
        "ncu-classify report h200.json h100.json -o report.md --title 'H200 vs H100'",
    ),
)
def report_command(
    cards_files: Annotated[
        list[Path],
        typer.Argument(help="cards JSON files (ours or legacy), overlaid", readable=False),
    ],
    output: Annotated[str, typer.Option("-o", "--output", help="file to write; - for stdout")],
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="html or md (default: from the -o suffix, else html)"),
    ] = None,
    title: Annotated[str, typer.Option("--title", help="title of the report")] = "",
    tries: Annotated[
        list[Path] | None,
        typer.Option("--tries", help="a `try` result (tries.json): the moves it measured shown"),
    ] = None,
) -> None:
    """Write a self-contained HTML report (roofline chart, per-stage time, sortable cards,
    kernels of each card) or a Markdown summary of one or more cards files."""
    from ..present.page import check_files, labels_for, page_html, page_markdown
    from .present import read_tries

    with errors():
        check_files(cards_files)
        target = check_output(output, list(cards_files))
        check_inputs(list(cards_files))
        fmt = output_format(fmt, output, PAGE_SUFFIXES, "html")
        files = [
            (label, read_cards(path))
            for label, path in zip(labels_for(cards_files), cards_files, strict=True)
        ]
        name = title or "ncu-classify report: " + ", ".join(label for label, _ in files)
        render = page_html if fmt == "html" else page_markdown
        target.write_text(render(files, name, read_tries(tries or [])))
    if not target.is_stdout:
        human(target).print(f"wrote the report to {printable(str(target))}")
