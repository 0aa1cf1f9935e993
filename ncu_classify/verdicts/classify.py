"""classify: report files or capture folders -> kernel rows -> classified cards.

A folder with a capture `manifest.json` yields one card per captured shape, in manifest order,
its kernels found by NVTX range. Any other report (a user's own ncu run) yields one card per
NVTX push/pop range, or per kernel name when there is none. Reports are read in parallel, one
process per report, and merged in input order so the output does not depend on timing.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..capture.manifest import ID_TELLS, ManifestShape
from ..cards.files import KernelJson
from ..cards.model import Card, CardFile, KernelCard
from ..cards.rollup import card_class, count_classes
from ..core.clock import utc_now
from ..core.collector import collector_paused
from ..core.noise import Noise, RunToRun, load_noise
from ..core.paths import short_names, shown_line, shown_under
from ..core.text import unicode_safe
from ..read.names import report_stem
from ..read.parallel import ReadProgress, read_all
from ..read.preload import finish_loading, start_loading
from ..read.rows import KernelRow
from .coverage import set_coverage
from .drill_merge import merge_drill_downs
from .group_ids import manifest_shape_of_id, parse_group_id
from .inputs import ReportSet, capture_environments, collect_inputs, input_files
from .judge import build_card, kernel_card
from .parts import not_given, own_shapes, repeats_not_given
from .repeats import by_repeat, with_repeats
from .rules import LoadedRules
from .shards import missing_shards
from .unfinished import Classified, said_unfinished, split_unfinished, without_old_repeats
from .unmanifested import missing_manifest_warnings

__all__ = ["classify", "input_files"]


def _shape_card(
    shape: ManifestShape, pairs: list[Classified], rules: LoadedRules, reads: Reads
) -> Card:
    records, kernels = [p[0] for p in pairs], [p[1] for p in pairs]
    error = shape.error if shape.status != "ok" else None
    if shape.status == "pending":
        error = (
            "not captured: the capture stopped before this shape (pending in the manifest);"
            " finish it with capture --resume"
        )
    stem = report_stem(shape.report) if shape.report else None
    found = reads.report_set
    path = next((p for p in found.reports if report_stem(p) == stem), None)
    if shape.status == "ok" and path is not None and path in reads.failed:
        error = f"its report could not be read: {reads.failed[path]}"
    elif shape.status == "ok" and path is None and found.part:
        error = not_given(shape)
    elif shape.status == "ok" and path is None and stem in found.problems:
        error = f"its report could not be read: {shown_line(found.problems[stem], reads.named)}"
    elif shape.status == "ok" and not records and shape.report:
        error = f"no kernel of range {shape.group!r} found in {shape.report}"
    elif shape.status == "ok" and shape.kernels is not None and len(records) != shape.kernels:
        error = (
            f"{len(records)} kernels of this range in the report, but capture counted"
            f" {shape.kernels}: report incomplete?"
        )
    report = shown_under(path, reads.named) if path is not None else shape.report
    card = build_card(
        **shape.identity(),
        kernels=kernels,
        rules=rules,
        records=records,
        ncu_output=report,
        error=error,
    )
    if not shape.light:
        return card
    return card.model_copy(update={"captured_light": True, "notes": [*card.notes, LIGHT_NOTE]})


# A card of a shape `capture --light-after` took with the light list (core.metrics.LIGHT_METRICS):
# the rules judge what it has, and what needs the rest stays unknown (unchecked, unresolved).
LIGHT_NOTE = (
    "captured with the light metric list: sm_pct, l2_pct, hot units and the roofline's FLOPs"
    " were not measured"
)


def _foreign_cards(
    pairs: list[Classified],
    rules: LoadedRules,
    labels: dict[str, str],
    warnings: list[str] | None = None,
) -> list[Card]:
    """Cards for kernels no manifest claims: per innermost NVTX range that is one of our group
    ids (a capture report read without its folder: the shape, stage and nominal FLOPs come back
    from the id), else per NVTX range, else per kernel name; the stage of the last two is the
    report's label (its stem, or more where stems clash)."""
    groups: dict[tuple[str, str, str], list[Classified]] = {}
    for rec, card in pairs:
        stem = labels.get(rec.report) or report_stem(rec.report)
        if rec.nvtx_ranges and _told_by_id(rec.nvtx_ranges[-1]) is not None:
            key = (stem, "group", rec.nvtx_ranges[-1])
        elif rec.nvtx_ranges:
            key = (stem, "nvtx_range", "/".join(rec.nvtx_ranges))
        else:
            key = (stem, "kernel", rec.function_name)
        groups.setdefault(key, []).append((rec, card))
    cards = []
    repeated: set[str] = set()
    for (stem, kind, name), members in groups.items():
        first, later = _first_launch(members)
        made = build_card(
            rules=rules,
            records=[p[0] for p in first],
            kernels=[p[1] for p in first],
            ncu_output=first[0][0].report,
            **_identity(stem, kind, name),
        )
        if later and warnings is not None and first[0][0].report not in repeated:
            repeated.add(first[0][0].report)
            warnings.append(
                f"{first[0][0].report}: launches of capture --repeat read without their capture"
                " folder: each card is its first launch alone (durations only, if a duration"
                " batch's report): classify the folder"
            )
        if later:
            note = (
                f"{later} more launches of this shape (repeat# ranges) are in the report, left"
                " out: classify the capture folder for their spread"
            )
            made = made.model_copy(update={"notes": [*made.notes, note]})
        cards.append(made)
    return cards


def _first_launch(members: list[Classified]) -> tuple[list[Classified], int]:
    """The kernels of the first measured launch of a range (a report of capture --repeat
    holds several, in `repeat#N` ranges) and how many later launches were left out."""
    numbers = sorted({rec.repeat or 1 for rec, _ in members})
    if len(numbers) == 1:
        return members, 0
    return [p for p in members if (p[0].repeat or 1) == numbers[0]], len(numbers) - 1


def _identity(stem: str, kind: str, name: str) -> dict[str, Any]:
    """Group, stage, op (and for a group id its shape and nominal FLOPs and bytes, as capture
    computes them) of a card no manifest describes."""
    told = _told_by_id(name) if kind == "group" else None
    if told is None:
        return {"group": f"{stem}:{name}", "stage": stem, "op": kind}
    own: dict[str, Any] = json.loads(told)  # a card's own copy, 4x cheaper than deepcopy
    return own


@functools.lru_cache(maxsize=4096)
def _told_by_id(name: str) -> str | None:
    """What a group id tells of its shape (ID_TELLS) as JSON text, None for a name that is
    not one of our ids; once per id (a folder of many reports of one capture repeats every id:
    parsing and checking an id costs more than classifying its kernels)."""
    entry = parse_group_id(name)
    if entry is None:
        return None
    told = manifest_shape_of_id(entry).identity()
    return json.dumps({key: told[key] for key in ID_TELLS})


@dataclass
class Reads:
    """What reading gave for one report set: kernels per report, errors per failed report."""

    report_set: ReportSet
    ok: dict[Path, list[Classified]]
    failed: dict[Path, str]
    labels: dict[str, str]
    run_to_run: RunToRun | None = None  # the noise between captures (stability of repeats)
    warnings: list[str] = field(default_factory=list)  # the cards file's input warnings
    named: dict[Path, str] = field(default_factory=dict)  # inputs as the cards name them


def cards_for_set(reads: Reads, rules: LoadedRules) -> list[Card]:
    """Cards of one report set: the manifest's shapes first, then anything unclaimed."""
    given = reads.report_set
    pairs = [pair for path in given.reports if path in reads.ok for pair in reads.ok[path]]
    if given.manifest is None:
        return _foreign_cards(pairs, rules, reads.labels, reads.warnings)
    # Key kernels by (report, range): after --resume a range can sit in an older report too
    # (a crashed first attempt); a shape takes the kernels of the report its record names.
    by_range: dict[tuple[str, str], list[Classified]] = {}
    for pair in pairs:
        ranges = pair[0].nvtx_ranges
        key = (report_stem(pair[0].report), ranges[-1] if ranges else "")
        by_range.setdefault(key, []).append(pair)
    cards = []
    shapes = given.manifest.shapes
    if given.part:  # a capture read in part: the shapes of its reports alone
        shapes = own_shapes(given.manifest, given.reports, pairs)
    for shape in shapes:
        stem = report_stem(shape.report) if shape.report else ""
        # (a shape that failed part way keeps no kernels: left out, its card says so)
        found = by_range.pop((stem, shape.group), []) if shape.status == "ok" else []
        times = report_stem(shape.times_report) if shape.times_report else None
        timed = by_range.pop((times, shape.group), []) if times else []
        first = [p for p in found if p[0].repeat in (None, 1)]
        card = _shape_card(shape, first, rules, reads)
        later = [p[0] for p in found if p[0].repeat not in (None, 1)] + [p[0] for p in timed]
        measured = repeats_not_given(card, shape, given.reports) if given.part else None
        if measured is None:  # (else a part's shape whose repeats were not given: a note)
            measured = with_repeats(card, by_repeat(later), given.manifest, rules, reads.run_to_run)
        cards.append(measured)
    leftovers = [pair for members in by_range.values() for pair in members]
    leftovers = without_old_repeats(leftovers, given.manifest, reads.warnings)
    leftovers, unfinished = split_unfinished(leftovers, given.manifest)
    cards = [said_unfinished(c, s, unfinished) for c, s in zip(cards, shapes, strict=True)]
    return cards + _foreign_cards(leftovers, rules, reads.labels, reads.warnings)


def classify(
    paths: list[Path],
    rules: LoadedRules,
    jobs: int | None = None,
    progress: ReadProgress | None = None,
    noise: Noise | None = None,
    partial: bool = False,
    kernel_json: KernelJson | None = None,
) -> CardFile:
    """Read every report under `paths` and build the cards file (input errors listed in it).
    An invalid capture manifest raises ManifestError before any report is read. `noise`
    (default: the packaged H200 file) widens the intervals of repeated cards by the
    run-to-run spread when their verdicts' stability is judged. Shards of a split capture
    that are not among `paths` are input errors (warnings with `partial`). `kernel_json`
    gets each kernel card's JSON, made by the readers, for `card_file_text`."""
    start_loading()  # NVIDIA's metrics library loads while the inputs are listed
    try:
        with collector_paused():
            return _classify(paths, rules, jobs, progress, noise, partial, kernel_json)
    finally:
        finish_loading()  # no thread left behind, also on an error before any read


def _classify(
    paths: list[Path],
    rules: LoadedRules,
    jobs: int | None,
    progress: ReadProgress | None,
    noise: Noise | None,
    partial: bool,
    kernel_json: KernelJson | None,
) -> CardFile:
    absolute = [Path(os.path.abspath(p)) for p in paths]  # `.`, `..` named as from anywhere
    inputs = collect_inputs(absolute)
    named = dict(zip(absolute, short_names(paths), strict=True))
    missing = missing_shards(inputs.report_sets, partial, named)
    (inputs.warnings if partial else inputs.errors).extend(missing)
    all_reports = inputs.reports()
    shown = {path: unicode_safe(shown_under(path, named)) for path in all_reports}
    per_kernel = _card_and_json if kernel_json is not None else kernel_card
    results = read_all(
        all_reports,
        jobs or os.cpu_count() or 1,
        functools.partial(per_kernel, rules=rules),
        progress,
        [Path(shown[path]) for path in all_reports],
    )
    ok: dict[Path, list[Classified]] = {}
    failed: dict[Path, str] = {}
    for path, result in zip(all_reports, results, strict=True):
        if isinstance(result, str):
            inputs.errors.append(result)
            failed[path] = result
        elif kernel_json is None:
            ok[path] = result
        else:
            ok[path] = [(row, card) for row, (card, _) in result]
            for _, (card, text) in result:
                kernel_json.keep(card, text)
    labels = {shown[p]: unicode_safe(label) for p, label in inputs.labels.items()}
    if noise is None and any(row.repeat for rows in ok.values() for row, _ in rows):
        noise = load_noise()[0]  # parsed only for repeated cards, the ones it judges
    run_to_run = noise.run_to_run if noise else None
    per_set: list[tuple[ReportSet, list[Card]]] = []
    for report_set in inputs.report_sets:
        reads = Reads(report_set, ok, failed, labels, run_to_run, inputs.warnings, named)
        per_set.append((report_set, cards_for_set(reads, rules)))
    inputs.warnings += missing_manifest_warnings(per_set, failed)
    per_set = merge_drill_downs(per_set, rules, inputs.warnings, named)
    cards = [card for _, found in per_set for card in found]
    if noise and noise.run_to_run is None and any(c.measurement for c in cards):
        inputs.warnings.append(
            f"noise {noise.id}: no run_to_run: the stability of repeated verdicts rests on each"
            " capture's own spread alone, which misses what moves between captures"
        )
    summary, by_stage = count_classes(map(card_class, cards))
    return CardFile(
        generated_at=utc_now(),
        tool_version=__version__,
        rules=rules.rules.summary_text(),
        rules_id=rules.rules.id,
        rules_file=rules.file_name,
        rules_sha256=rules.sha256,
        rules_yaml=rules.text,
        inputs=[unicode_safe(name) for name in named.values()],
        captures=capture_environments([s for s in inputs.report_sets if s.manifest]),
        input_errors=[unicode_safe(shown_line(e, named)) for e in inputs.errors],
        input_warnings=[
            unicode_safe(shown_line(w, named)) for w in inputs.warnings + duplicate_groups(cards)
        ],
        coverage=set_coverage(per_set),
        cards=cards,
        summary=summary,
        by_stage=by_stage,
    )


# Every model nested in a fresh kernel card but its drill-down has every field set, so that
# leaving out the card's own unset fields writes what `exclude_unset` writes, a third faster.
KERNEL_FIELDS = set(KernelCard.model_fields)


def _card_and_json(record: KernelRow, rules: LoadedRules) -> tuple[KernelCard, str]:
    """A kernel's card and its JSON, made where the kernel is read: by the parallel readers,
    instead of the one process that writes the file."""
    card = kernel_card(record, rules)
    if card.drill_down is not None:  # its source leaves `created_at` unset
        return card, card.model_dump_json(exclude_unset=True)
    return card, card.model_dump_json(exclude=KERNEL_FIELDS - card.model_fields_set)


def duplicate_groups(cards: list[Card]) -> list[str]:
    """A warning per group id that more than one card carries (two copies of one capture)."""
    counts: dict[str, int] = {}
    for card in cards:
        counts[card.group] = counts.get(card.group, 0) + 1
    return [f"group {g!r} appears in {n} cards" for g, n in counts.items() if n > 1]
