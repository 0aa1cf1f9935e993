"""`ncu-classify try`: the top moves of a cards file measured, each original beside its
alternatives in one capture (the work is in `tries`; this layer checks the options, shows the
progress and prints each move's figures)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .app import CardsArgument, RulesOption, app, errors, examples
from .options import positive_int, repeat_count
from .terminal import capture_progress, out

if TYPE_CHECKING:
    from ..tries.plan_models import TryPlan
    from ..tries.program import ProgramMove
    from ..tries.results import TryResults


@app.command(
    "try",
    epilog=examples(
        "ncu-classify try cards.json --shapes shapes.yaml -o tries/ --stage vae --top 10",
        "ncu-classify try cards.json --shapes shapes.yaml -o tries/ --repeat 5",
        "ncu-classify try cards.json --shapes shapes.yaml -o tries/ --plan-only",
        "ncu-classify try cards.json --shapes shapes.yaml -o tries/ --stage vae --chains 10",
        "ncu-classify try cards.json --shapes shapes.yaml -o tries/ --stage vae --folds 8",
    ),
)
def try_command(
    cards_file: CardsArgument,
    shapes: Annotated[
        Path, typer.Option("--shapes", help="the shapes file the cards were captured from")
    ],
    output_given: Annotated[
        str,
        typer.Option(
            "-o", "--output", metavar="<path>", help="folder for the plan, capture and results"
        ),
    ],
    top: Annotated[
        int | None,
        typer.Option(
            help="moves measured, per --stage named (ranked as `next` ranks) [default: 10]",
            callback=positive_int,
        ),
    ] = None,
    stage: Annotated[
        list[str] | None, typer.Option("--stage", help="only this stage (repeatable)")
    ] = None,
    repeat: Annotated[
        int,
        typer.Option(
            help="launches timed per alternative (2-100) for Student-t intervals",
            callback=repeat_count,
        ),
    ] = 5,
    ncu: Annotated[str, typer.Option(help="ncu executable")] = "ncu",
    rules: RulesOption = None,
    chains: Annotated[
        int | None,
        typer.Option(
            help="also this many of the recording's largest chains of device ops (its"
            " `chains:` section), each eagerly and fused by torch.compile [default: 5]",
            min=0,
        ),
    ] = None,
    folds: Annotated[
        int | None,
        typer.Option(
            help="also this many of the recording's largest pads that feed a conv (tied by its"
            " chains), each with the conv as recorded and folded into the conv's own padding"
            " [default: 5]",
            min=0,
        ),
    ] = None,
    program: Annotated[
        str | None,
        typer.Option(
            help="a program-wide move instead: bf16, channels_last or bf16_channels_last, every"
            " shape of the --stage changed together and timed against the shapes as recorded",
        ),
    ] = None,
    plan_only: Annotated[
        bool, typer.Option(help="write plan.json and shapes.yaml, capture nothing")
    ] = False,
) -> None:
    """Measure the next moves: for each of the top cards, the op as recorded and every
    alternative its facts allow (layout, dtype, attention backend, tile padding, Inductor),
    captured in one run with repeats; per alternative its kernels, time per call, saving per
    inference with its interval and its numerics against the original; the winner per move.
    With the recording's chains: its largest chains fused, and its pads folded into the conv
    each feeds."""
    from ..capture.plan import CaptureOptions
    from ..core.errors import UsageError
    from ..core.text import printable
    from ..tries.run import check_folder, plan_folder, run_tries
    from ..verdicts.rules import load_rules
    from .app import check_inputs
    from .outputs import output_folder

    with errors():
        if repeat < 2 and not plan_only:
            raise UsageError("--repeat must be 2 or more: the savings need intervals")
        target = output_folder(output_given)
        inputs = [cards_file, shapes, *([rules] if rules else [])]
        check_inputs(inputs)
        check_folder(target, inputs)
        loaded = load_rules(rules)
        move = _program_move(program)
        _alone(move, top, chains, folds)
        plan, shares = plan_folder(
            cards_file, shapes, target, 10 if top is None else top, stage or [], move,
            5 if chains is None else chains, 5 if folds is None else folds,
        )  # fmt: skip
    count = sum(len(m.tries) for m in plan.moves) + _program_shapes(plan)
    moves = f"{len(plan.moves)} move{'' if len(plan.moves) == 1 else 's'}"
    what = f"a program-wide move ({plan.program.move})" if plan.program else moves
    missed = f"; {len(plan.not_found)} timed cards passed over, not in {shapes} (not_found)"
    out.print(
        printable(
            f"planned {what}, {count} shapes: {target / 'plan.json'}, {target / 'shapes.yaml'}"
            + (missed if plan.not_found else "")
        ),
    )
    for line in [*shares, *fold_lines(plan, stage or [])]:
        out.print(printable(line))
    if plan_only:
        return
    options = CaptureOptions(ncu=ncu, repeat=repeat, per_stage=False, drop_sources=True)
    with errors(), capture_progress() as progress:
        results = run_tries(plan, target, options, loaded, progress=progress)
    print_results(results)
    _check_measured(results, target)


def fold_lines(plan: TryPlan, stages: list[str]) -> list[str]:
    """A line per pad fold planned (its move, calls and why), per pad passed over, per stage
    with no chains to tie its pads, and per `--stage` named with nothing to fold (every stage
    of the recording would be noise when none is named)."""
    lines = [
        f"fold {m.rank}: {m.group} x{m.calls}: {m.tries[-1].why}"
        for m in plan.moves
        if m.op == "fold"
    ]
    lines += [
        f"{p.group}: {p.why}"
        for p in plan.no_alternative
        if p.why.startswith("not folded")
        or (p.why.startswith("nothing to fold") and p.group.removesuffix(":fold") in stages)
    ]
    return lines


def _check_measured(results: TryResults, target: Path) -> None:
    """Exit 5 when a move measured nothing (its original failed to capture; an alternative
    that cannot run is a result) or its original has no repeats (no interval to win by)."""
    from ..core.errors import CaptureError

    moves = len(results.moves)
    lost = sum(1 for m in results.moves if m.original.status != "ok")
    bare = sum(
        1
        for m in results.moves
        if m.original.time is not None and m.original.time.ci95_low_us is None
    )
    problems = [f"{lost} of {moves} moves measured nothing: the op as recorded failed to capture"]
    problems = (problems if lost else []) + (
        [f"{bare} of {moves} moves have no repeats (no intervals)"] if bare else []
    )
    if problems:
        with errors():
            raise CaptureError(f"{'; '.join(problems)}; see {target / 'raw' / 'manifest.json'}")


def _program_move(given: str | None) -> ProgramMove | None:
    """--program's value, checked (one line, exit 2, for another)."""
    from typing import get_args

    from ..core.errors import UsageError
    from ..tries.program import ProgramMove

    if given is None:
        return None
    if given not in get_args(ProgramMove):
        raise UsageError(f"--program {given!r}: one of {', '.join(get_args(ProgramMove))}")
    return given  # type: ignore[return-value]


def _alone(
    move: ProgramMove | None, top: int | None, chains: int | None, folds: int | None
) -> None:
    """--program with --top, --chains or --folds: a usage error (exit 2), not options silently
    ignored: a program-wide move changes every shape of the --stage, it picks no moves."""
    from ..core.errors import UsageError

    options = (("--top", top), ("--chains", chains), ("--folds", folds))
    given = [name for name, value in options if value is not None]
    if move is not None and given:
        raise UsageError(
            f"--program {move} changes every shape of the --stage; {_listed(given)}"
            f" {'pick' if len(given) > 1 else 'picks'} moves of the cards and cannot go with it:"
            " try those into another folder"
        )


def _listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _program_shapes(plan: TryPlan) -> int:
    """Shapes a program-wide plan captures (each changed shape twice, a removed one once)."""
    if plan.program is None:
        return 0
    return sum(2 if p.changed else 1 for p in plan.program.pairs)


def print_results(results: TryResults) -> None:
    """Per move: each alternative's time per call, saving per inference and numerics (the
    user's stage names and group ids with their control characters escaped)."""
    from ..core.text import printable

    if results.program is not None:
        for s in results.program.stages:
            ci = (
                f" [{s.saving_ci95_us[0]:,.1f}, {s.saving_ci95_us[1]:,.1f}]"
                if s.saving_ci95_us
                else ""
            )
            out.print(
                printable(
                    f"{s.stage}: {results.program.move} over {s.shapes} shapes:"
                    f" {s.as_recorded_us:,.1f} -> {s.changed_us:,.1f} us per inference, saves"
                    f" {s.saving_us:,.1f}{ci}; {len(s.failed)} failed, {len(s.removed)} removed"
                )
            )
    for move in results.moves:
        out.print(printable(f"{move.rank:>3}  {move.group}  x{move.calls}"))
        for alt in [move.original, *move.alternatives]:
            out.print(printable("     " + _alt_line(alt, alt is move.original, move.winner)))
    for stage, saving in results.stage_savings_us.items():
        once = results.overlap_us.get(stage)
        inside = "are the winning chains' or folds'"
        note = f" (each op once: {once:,.1f} us of per-op savings {inside})" if once else ""
        out.print(
            printable(f"{stage}: the winners save {saving / 1000:,.3f} ms per inference{note}")
        )


def _alt_line(alt: object, original: bool, winner: str | None) -> str:
    """One alternative in a line."""
    from ..tries.results import TriedAlternative, numerics_text

    assert isinstance(alt, TriedAlternative)
    mark = "*" if alt.label == winner else " "
    if alt.time is None:
        return f"{mark} {alt.label:<26} {alt.status}"
    time = f"{alt.time.mean_us:,.1f} us/call"
    if alt.time.ci95_low_us is not None and alt.time.ci95_high_us is not None:
        time += f" (+-{(alt.time.ci95_high_us - alt.time.ci95_low_us) / 2:,.1f})"
    parts = [f"{mark} {alt.label:<26} {time}"]
    if not original and alt.saving_us is not None:
        low_high = alt.saving_ci95_us
        ci = f" [{low_high[0]:,.1f}, {low_high[1]:,.1f}]" if low_high else ""
        parts.append(f"saves {alt.saving_us:,.1f} us/inference{ci}")
    if alt.numerics is not None:
        parts.append(numerics_text(alt))
    parts.append(f"{len(alt.kernels)} kernels; {alt.primary or 'unclassified'}")
    return "; ".join(parts)
