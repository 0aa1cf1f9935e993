"""`try` from end to end: plan the moves, capture the original and its alternatives in one run
(the same harness, repeats for intervals, each output sampled for numerics), classify the
tries capture (so each alternative's card says what bounds it next), and set the figures
against each other. Every file lands in one folder: plan.json, shapes.yaml, raw/ (the
capture), outputs/ (the samples), cards.json and tries.json."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..capture.plan import CaptureOptions
from ..cards.files import load_card_file, write_card_file
from ..core.atomic import write_text_atomic
from ..core.errors import OutputError, UsageError
from ..core.text import unicode_safe
from ..shapes.file import ShapesFile, load_shapes
from ..verdicts.rules import LoadedRules
from .plan import plan_program_move, plan_tries, shapes_body, source_names, stage_shares, write_plan
from .plan_models import TryPlan
from .program import ProgramMove
from .results import TryResults, tried_results

Progress = Callable[[int, int, str, str], None]


WRITTEN = ("plan.json", "shapes.yaml", "cards.json", "tries.json")  # beside raw/, outputs/


def check_folder(out: Path, inputs: list[Path]) -> None:
    """UsageError when a file `try` writes into `out` is one of its inputs (`-o .` beside a
    shapes.yaml or cards.json): the recording would be replaced by the tries shapes file; or
    when `out` is no tries folder but holds what `try` would replace (a capture's folder, a
    recording's cards.json or shapes.yaml)."""
    for name in WRITTEN:
        for given in inputs:
            try:
                same = (out / name).samefile(given)
            except OSError:  # not there (yet): nothing to replace
                continue
            if same:
                raise UsageError(
                    f"-o {out}: try writes {name} there, and it is an input ({given});"
                    " choose another folder"
                )
    if (out / "manifest.json").is_file():
        raise UsageError(
            f"-o {out}: holds a capture (manifest.json); try captures into its own folder's"
            " raw/: choose another folder"
        )
    if not (out / "plan.json").is_file():
        for name in WRITTEN[1:]:
            if (out / name).exists():
                raise UsageError(
                    f"-o {out}: holds {name} but no plan.json (not a try folder): try would"
                    " replace it; choose another folder"
                )


def plan_folder(
    cards_path: Path, shapes_path: Path, out: Path, top: int, stages: list[str],
    program: ProgramMove | None = None, chains: int = 0, folds: int = 0,
) -> tuple[TryPlan, list[str]]:  # fmt: skip
    """Write the plan and the tries shapes file into `out`; refused when no move matches. With
    the plan, a line per stage: the share of its kernel time the moves hold (none for a
    program-wide move, which changes the whole stage)."""
    cards = load_card_file(cards_path)
    shapes = load_shapes(shapes_path)
    labels = (unicode_safe(str(cards_path)), unicode_safe(str(shapes_path)))  # JSON: UTF-8
    sources = _sources(cards_path, shapes_path)
    if program is not None:
        return _program_folder(shapes, labels, sources, out, stages, program), []
    plan, text = plan_tries(cards, shapes, labels, top, stages, chains, folds, sources)
    if not plan.moves and cards.source_format == "legacy":
        raise UsageError(
            f"{cards_path}: a legacy cards file; its group ids are not a capture's: try the"
            " cards classify wrote from a capture of the shapes file"
        )
    if not plan.moves:
        where = f" of stage {', '.join(stages)}" if stages else ""
        why = (
            f"none of their group ids is in {shapes_path}"
            if plan.not_found
            else f"no timed card{where}"
        )
        raise UsageError(f"{cards_path}: nothing to try: {why}")
    _write_plan(out, plan, text)
    return plan, stage_shares(plan, cards)


def _sources(cards_path: Path, shapes_path: Path) -> tuple[str, str]:
    """The inputs as the tries shapes file names them (name and digest); a file that cannot
    be read a second time is one line."""
    from ..core.errors import InputFileError

    try:
        return source_names(cards_path, shapes_path)
    except OSError as exc:
        raise InputFileError(f"cannot read the inputs again: {exc}") from None


def _program_folder(
    shapes: ShapesFile, labels: tuple[str, str], sources: tuple[str, str], out: Path,
    stages: list[str], move: ProgramMove,
) -> TryPlan:  # fmt: skip
    """The plan of a program-wide move; refused without a stage or when it changes nothing."""
    if not stages:
        raise UsageError("--program needs --stage: the stages whose every shape it changes")
    known = {e.stage for e in shapes.entries()}
    for stage in stages:
        if stage not in known:
            raise UsageError(f"--stage {stage}: {labels[1]} has no such stage")
    plan, text = plan_program_move(shapes, labels, stages, move, sources)
    if plan.program is None or not plan.program.pairs:
        raise UsageError(f"--program {move}: it changes no shape of {', '.join(stages)}")
    _write_plan(out, plan, text)
    return plan


def _write_plan(out: Path, plan: TryPlan, text: str) -> None:
    """The plan written into `out`, unless `out/raw` holds the capture of another plan: its
    plan.json and shapes.yaml would then no longer describe raw/, outputs/ and tries.json
    (and the capture could not be resumed); a folder that cannot be written is one line. The
    same plan with its inputs named otherwise (typed `./x` for `x`, an older `try`'s first
    line) keeps the shapes.yaml its capture was made from."""
    import hashlib

    from ..capture.manifest import read_manifest

    manifest = out / "raw" / "manifest.json"
    keep = False
    if manifest.is_file():
        captured = read_manifest(manifest).shapes_sha256
        if captured != hashlib.sha256(text.encode("utf-8")).hexdigest():
            keep = _same_plan(out / "shapes.yaml", captured, text)
    try:
        if keep:
            write_text_atomic(out / "plan.json", plan.model_dump_json(indent=2) + "\n")
        else:
            write_plan(out, plan, text)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write the plan: {exc.strerror or exc}") from None


def _same_plan(written: Path, captured: str, text: str) -> bool:
    """True when `written` (the folder's shapes.yaml) is the one its capture was made from
    and differs from `text` in its first line alone (the inputs' names); UsageError when it
    is another plan's, or is no longer the file the capture was made from."""
    import hashlib

    try:
        data = written.read_bytes()
    except OSError:
        data = None
    if data is None or hashlib.sha256(data).hexdigest() != captured:
        raise UsageError(
            f"{written.parent}: raw/ holds a capture, and {written.name} is not the file it was"
            " captured from (gone or edited): its plan cannot be told; try into another folder"
        )
    if shapes_body(data.decode("utf-8", errors="replace")) != shapes_body(text):
        raise UsageError(
            f"{written.parent}: holds the capture of another plan (raw/ was captured from"
            " another shapes.yaml: other cards, shapes file or options); try into another folder"
        )
    return True


def run_tries(
    plan: TryPlan,
    out: Path,
    options: CaptureOptions,
    rules: LoadedRules,
    progress: Progress | None = None,
) -> TryResults:
    """Capture `out/shapes.yaml` into `out/raw` (resumed when a capture is there), classify
    it into `out/cards.json` and write `out/tries.json`."""
    from ..capture.folder import writing
    from ..capture.run import capture
    from ..verdicts.classify import classify

    raw = out / "raw"
    if (raw / "manifest.json").is_file():  # resumed: the capture's own --repeat, or refused
        from ..capture.manifest import read_manifest

        made = read_manifest(raw / "manifest.json").repeat
        if made != options.repeat:
            raise UsageError(
                f"{out}: its capture was made with --repeat {made}: give that to resume it,"
                " or try into another folder"
            )
    program = plan.program is not None  # durations alone: every shape of a stage, twice
    options = replace(
        options,
        keep_outputs=None if program else out / "outputs",
        durations_only=program,
        resume=(raw / "manifest.json").is_file(),
    )
    manifest = capture(out / "shapes.yaml", raw, options, progress=progress)
    cards = classify([raw], rules)
    with writing(out):
        write_card_file(out / "cards.json", cards)
    results = tried_results(
        plan, cards, manifest, load_shapes(out / "shapes.yaml"), out / "outputs"
    )
    with writing(out):
        write_text_atomic(out / "tries.json", results.model_dump_json(indent=2) + "\n")
    return results
