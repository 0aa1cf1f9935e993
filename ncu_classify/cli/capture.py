"""`ncu-classify capture`: the shapes file replayed under ncu into a capture folder (the work is
in `capture.run`; this layer checks the options, shows the plan and the progress, and maps the
outcome to an exit code)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import CaptureError, UsageError
from ..core.paths import short_names
from .app import EXIT_INTERRUPTED, app, errors, examples
from .options import (
    capture_order,
    coverage_percent,
    light_percent,
    parse_gpus,
    parse_shard,
    positive_float,
    positive_int,
    repeat_count,
)
from .terminal import (
    capture_progress,
    print_interrupted,
    print_manifest,
    print_plan,
    warning_line,
)

if TYPE_CHECKING:
    from ..capture.manifest import DrillRequest
    from ..capture.order import StageShares
    from ..capture.plan import CaptureOptions


@app.command(
    "capture",
    epilog=examples(
        "ncu-classify capture --shapes fixtures/shapes/smoke.yaml -o raw/",
        "ncu-classify capture --shapes shapes.yaml -o raw/ --one-process --gpus 0,1 --resume",
        "ncu-classify capture --shapes shapes.yaml -o drill/ --drill-down cards.json --one-process",
        "ncu-classify capture --shapes shapes.yaml -o raw5/ --one-process --repeat 5",
        "ncu-classify capture --shapes recorded.yaml -o raw/ --coverage 99.5",
        "ncu-classify capture --shapes recorded.yaml -o raw/ --coverage 99.5 --light-after 95",
    ),
)
def capture_command(
    shapes: Annotated[Path, typer.Option("--shapes", help="shapes YAML file")],
    output_given: Annotated[
        str, typer.Option("-o", "--output", metavar="<path>", help="folder for reports + manifest")
    ],
    ncu: Annotated[str, typer.Option(help="ncu executable")] = "ncu",
    timeout: Annotated[
        float, typer.Option(help="seconds allowed per ncu process", callback=positive_float)
    ] = 3600.0,
    gpus: Annotated[
        str | None, typer.Option(help="CUDA devices to spread batches over, e.g. 0,1")
    ] = None,
    shard: Annotated[str, typer.Option(help="capture only shard K of N (K/N), e.g. 2/8")] = "1/1",
    max_batch: Annotated[
        int | None,
        typer.Option(help="at most this many shapes per ncu process", callback=positive_int),
    ] = None,
    per_stage: Annotated[
        bool,
        typer.Option(
            "--per-stage/--one-process",
            help="one ncu process per stage, or one for all shapes (one per GPU with --gpus)",
        ),
    ] = True,
    resume: Annotated[bool, typer.Option(help="finish a capture: only shapes not yet ok")] = False,
    stop_grace: Annotated[
        float,
        typer.Option(
            help="on Ctrl-C/SIGTERM, seconds the shape in hand may take before it is killed",
            callback=positive_float,
        ),
    ] = 20.0,
    dry_run: Annotated[bool, typer.Option(help="print the ncu command lines, run nothing")] = False,
    drill_down: Annotated[
        Path | None,
        typer.Option(
            "--drill-down",
            help="a cards file: capture again only its unresolved and borderline shapes (and"
            " those of --drill-class), with the warp-state counters; classify the capture"
            " folder beside this one to merge",
        ),
    ] = None,
    drill_class: Annotated[
        list[str] | None,
        typer.Option("--drill-class", help="also drill the cards of this class (repeatable)"),
    ] = None,
    repeat: Annotated[
        int,
        typer.Option(
            help="measure each shape N times (1-100; 1, the default: once): the card metrics"
            " once, the duration N times (a second, duration-only ncu process per batch); cards"
            " then carry"
            " intervals and say whether their verdicts are stable",
            callback=repeat_count,
        ),
    ] = 1,
    repeat_counters: Annotated[
        bool,
        typer.Option(
            help="with --repeat: every launch with all card metrics (N times the replay passes)"
        ),
    ] = False,
    drop_sources: Annotated[
        bool,
        typer.Option(
            help="rewrite each report without the SASS and source of its kernels (about 88 %"
            " of its bytes, no counter: the cards stay the same; Nsight Compute's Source page"
            " then shows nothing)"
        ),
    ] = False,
    order: Annotated[
        str,
        typer.Option(
            metavar="[time|file]",
            callback=capture_order,
            help="time: the shapes of a recording made on a GPU by their program time, largest"
            " first, so that whatever stops the capture the shapes done matter most; file:"
            " the shapes file's order",
        ),
    ] = "time",
    coverage: Annotated[
        float | None,
        typer.Option(
            metavar="PERCENT",
            help="capture, per stage, the largest shapes until they cover this share of the"
            " stage's recorded kernel time; the rest are listed as below the target (needs a"
            " recording made on a GPU; --resume keeps the capture's target unless given)",
            callback=coverage_percent,
        ),
    ] = None,
    light_after: Annotated[
        float | None,
        typer.Option(
            metavar="PCT",
            help="with --coverage: per stage, the shapes past PCT % of the stage's time (up to"
            " the target) are captured with the light metric list, about one replay pass a"
            " kernel; their cards leave sm_pct, l2_pct, hot units and FLOPs unmeasured"
            " (--resume keeps the capture's value unless given; 0: none, the light shapes"
            " captured again in full)",
            callback=light_percent,
        ),
    ] = None,
) -> None:
    """Replay every shape under ncu into OUTPUT (reports + manifest.json)."""
    from ..capture.light import check_light_after
    from ..capture.run import CaptureOptions, capture, plan_capture
    from .outputs import output_folder

    if drill_class and drill_down is None:
        with errors():
            raise UsageError("--drill-class needs --drill-down CARDS")
    if coverage is not None and drill_down is not None:
        with errors():
            raise UsageError(
                "--coverage and --drill-down: a drill-down captures the shapes it names"
            )
    if light_after is not None and (coverage is not None or not resume):
        with errors():  # (on --resume the capture's own target may apply: checked at plan)
            check_light_after(light_after, coverage)
    if repeat_counters and repeat < 2:
        with errors():
            raise UsageError("--repeat-counters needs --repeat N with N of 2 or more")
    options = CaptureOptions(
        ncu=ncu,
        timeout_s=timeout,
        gpus=parse_gpus(gpus),
        shard=parse_shard(shard),
        max_batch=max_batch or 0,
        resume=resume,
        per_stage=per_stage,
        stop_grace_s=stop_grace,
        repeat=repeat,
        repeat_counters=repeat_counters,
        drop_sources=drop_sources,
        order="file" if order == "file" else "time",
        coverage_pct=coverage,
        light_after_pct=light_after,
    )
    with errors():
        output = output_folder(output_given)
        if drill_down is not None:
            options = replace(options, drill=drill_request(drill_down, drill_class or []))
        if dry_run:  # checked against the GPU nvidia-smi lists, else the largest one made
            from ..capture.host import visible_gpu_bytes

            gpu_bytes = visible_gpu_bytes(options.gpus)
            print_plan(plan_capture(shapes, output, options, gpu_bytes))
            return
    try:
        shares, before = progress_shares(shapes, output, options)
        with errors(), capture_progress(shares, before) as progress:
            manifest = capture(shapes, output, options, progress=progress)
    except typer.Exit as stopped:
        if stopped.exit_code == EXIT_INTERRUPTED:
            print_interrupted(output)
        raise
    print_manifest(manifest)
    failed = [s for s in manifest.shapes if s.status != "ok"]
    untimed = [s for s in manifest.shapes if s.status == "ok" and s.times_status == "failed"]
    problems = [f"{len(failed)} of {len(manifest.shapes)} shapes failed"] if failed else []
    if untimed:
        problems.append(f"{len(untimed)} of {len(manifest.shapes)} shapes have no repeats")
    if unfull := [s for s in manifest.shapes if s.status == "ok" and s.light and s.error]:
        problems.append(f"{len(unfull)} light shapes failed their capture in full (still light)")
    if problems:
        with errors():
            raise CaptureError(f"{'; '.join(problems)}; see {output / 'manifest.json'}")


def stage_shares(shapes: Path, options: CaptureOptions) -> StageShares | None:
    """Each stage's recorded time and its shapes' shares, for the progress line, with a
    shard's own share of each stage (None for a file without recorded times, or one capture
    will refuse and say why)."""
    from ..capture.order import StageShares
    from ..capture.shards import select_shard
    from ..core.errors import NcuClassifyError
    from ..shapes.file import read_shapes

    try:
        read = read_shapes(shapes)[0]
        if options.shard == (1, 1):
            return StageShares.of(read)
        shard = select_shard(read.entries(), *options.shard, options.shard_method)
        return StageShares.of(read, [e.group for e in shard])
    except (NcuClassifyError, OSError):
        return None


def progress_shares(
    shapes: Path, output: Path, options: CaptureOptions
) -> tuple[StageShares | None, list[str]]:
    """The progress line's stage shares and the shapes an earlier run of a capture being
    resumed captured (ok), its shard taken by the capture's own method (an older capture's
    `hash` shards: by cost_v1's, the line said the shard held another share of each stage);
    none captured when its manifest cannot be read (capture then says why)."""
    from ..capture.manifest import MANIFEST_NAME, read_manifest
    from ..core.errors import NcuClassifyError

    if not options.resume:
        return stage_shares(shapes, options), []
    try:
        manifest = read_manifest(output / MANIFEST_NAME)
    except (NcuClassifyError, OSError):
        return stage_shares(shapes, options), []
    options = replace(options, shard_method=manifest.shard_method)
    before = [shape.group for shape in manifest.shapes if shape.status == "ok"]
    return stage_shares(shapes, options), before


def drill_request(cards_path: Path, classes: list[str]) -> DrillRequest:
    """The drill-down request of a cards file: the shapes to capture again and why."""
    import hashlib

    from ..capture.manifest import DrillRequest
    from ..cards.selection import drill_selection
    from .app import check_inputs, read_cards

    check_inputs([cards_path])
    cards = read_cards(cards_path)
    if cards.source_format == "legacy":
        raise UsageError(
            f"{cards_path}: a legacy cards file; its group ids are not a capture's: drill down"
            " the cards classify wrote from a capture of the shapes file"
        )
    known = {c.primary for c in cards.cards if c.primary}
    for name in classes:
        if name not in known:
            warning_line(f"--drill-class {name}: no card of {cards_path} has that class")
    selected = drill_selection(cards, classes)
    if not selected:
        raise UsageError(
            f"{cards_path}: no card to drill down (none unresolved, borderline or of the classes"
            " named, or all drilled already)"
        )
    digest = hashlib.sha256(cards_path.read_bytes()).hexdigest()
    return DrillRequest(
        cards_file=short_names([cards_path])[0], cards_sha256=digest, selected=selected
    )
