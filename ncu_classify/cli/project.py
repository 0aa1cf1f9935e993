"""`ncu-classify project`: a cards file projected onto another GPU of the table (the CLI layer;
the model is `cards.projection`, the table `data/gpus.yaml`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from ..core.paths import short_names
from ..core.text import counted, printable
from ..present.tables import check_kind
from .app import (
    CardsArgument,
    OutputOption,
    app,
    check_inputs,
    check_output,
    errors,
    examples,
    human,
    read_cards,
)
from .terminal import print_summary

# The table's keys for --to's help, read without parsing the YAML (the CLI starts light).
TABLE = Path(__file__).resolve().parent.parent / "data" / "gpus.yaml"
KEYS = re.findall(r"^([A-Za-z0-9][\w.-]*):\s*$", TABLE.read_text(encoding="utf-8"), re.M)


@app.command(
    "project",
    epilog=examples(
        "ncu-classify project cards.json --to H100-SXM -o cards_h100.json",
        "ncu-classify project foreign.json --from H200 --to A100-SXM4-80GB -o cards_a100.json",
    ),
)
def project_command(
    cards_file: CardsArgument,
    to: Annotated[str, typer.Option("--to", help=f"the GPU to project onto: {', '.join(KEYS)}")],
    output: OutputOption,
    source: Annotated[
        str | None,
        typer.Option(
            "--from", help="the table's GPU the cards were measured on (default: their gpu.name)"
        ),
    ] = None,
) -> None:
    """Project every kernel of a cards file onto another GPU by its binding roof (a
    projection, marked as one: see its `projection` block); kernels the model cannot project
    are listed with why. Exit 2 for a GPU not in the table, 3 for cards it cannot project."""
    from ..cards.files import card_file_text
    from ..cards.gpus import gpu_spec
    from ..cards.projection import project, source_gpu

    with errors():
        target = check_output(output, [cards_file])
        check_inputs([cards_file])
        check_kind(output, "JSON")
        onto = gpu_spec(to)
        measured = read_cards(cards_file)
        origin = source_gpu(measured, cards_file, source)
        named = short_names([cards_file])[0]  # as every output names its inputs
        cards = project(measured, named, origin, onto)
        target.write_text(card_file_text(cards))
    console = human(target)
    print_summary(cards, console)
    done = cards.projection
    assert done is not None
    console.print(
        f"projected {counted(done.projected_kernels, 'kernel')} of {done.kernels:,} from"
        f" {done.source} onto {done.target}; wrote {counted(len(cards.cards), 'card')} to"
        f" {printable(str(target))}"
    )
