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
from ..core.errors import UsageError
from ..shapes.file import load_shapes
from ..verdicts.rules import LoadedRules
from .plan import TryPlan, plan_tries, write_plan
from .results import TryResults, tried_results

Progress = Callable[[int, int, str, str], None]


def plan_folder(
    cards_path: Path, shapes_path: Path, out: Path, top: int, stages: list[str]
) -> TryPlan:
    """Write the plan and the tries shapes file into `out`; refused when no move matches."""
    cards = load_card_file(cards_path)
    shapes = load_shapes(shapes_path)
    plan, text = plan_tries(cards, shapes, (str(cards_path), str(shapes_path)), top, stages)
    if not plan.moves:
        where = f" of stage {', '.join(stages)}" if stages else ""
        why = (
            f"none of their group ids is in {shapes_path}"
            if plan.not_found
            else f"no timed card{where}"
        )
        raise UsageError(f"{cards_path}: nothing to try: {why}")
    write_plan(out, plan, text)
    return plan


def run_tries(
    plan: TryPlan,
    out: Path,
    options: CaptureOptions,
    rules: LoadedRules,
    progress: Progress | None = None,
) -> TryResults:
    """Capture `out/shapes.yaml` into `out/raw` (resumed when a capture is there), classify
    it into `out/cards.json` and write `out/tries.json`."""
    from ..capture.run import capture
    from ..verdicts.classify import classify

    raw = out / "raw"
    options = replace(
        options, keep_outputs=out / "outputs", resume=(raw / "manifest.json").is_file()
    )
    manifest = capture(out / "shapes.yaml", raw, options, progress=progress)
    cards = classify([raw], rules)
    write_card_file(out / "cards.json", cards)
    results = tried_results(
        plan, cards, manifest, load_shapes(out / "shapes.yaml"), out / "outputs"
    )
    write_text_atomic(out / "tries.json", results.model_dump_json(indent=2) + "\n")
    return results
