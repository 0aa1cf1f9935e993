"""The two sides of a comparison: the rules both were classified under (when one file this
tool can load), each file's header (GPU, clocks, ceilings, software) and the warnings when
the GPUs or the software differ."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..cards.coverage import BELOW_TARGET_WHY
from ..cards.machine import Software, first_gpu, sm_clock_range
from ..cards.model import Card, CardFile, KernelCard
from ..cards.rollup import median_ceilings
from ..core.errors import RulesError
from ..core.stats import six_figures
from ..verdicts.group_ids import manifest_shape_of_id, parse_group_id
from ..verdicts.rules import DEFAULT_RULES, LoadedRules, load_rules, rules_from_text
from .matching import CardPair, same_shape
from .model import ShapeDiff, SideHeader


def rules_places(cards: CardFile, cards_path: Path) -> list[Path]:
    """The files that may hold the rules `cards` name and do not keep (cards before 1.7 name
    the rules file by its path from where classify ran): that path beside the cards file and
    in each folder above it, then in the working folder; those that exist."""
    if not cards.rules_file or cards.rules_file == "default" or cards.rules_yaml:
        return []
    given = Path(cards.rules_file)
    folder = Path(os.path.abspath(cards_path)).parent
    places = [base / given for base in (folder, *folder.parents)] + [given]
    return [p for p in dict.fromkeys(places) if _is_file(p)]


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; False for a name no file can have (too long, a NUL)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def readable_rules(cards: CardFile, places: Iterable[Path] = ()) -> tuple[LoadedRules, ...]:
    """The rules `cards` may have been classified under that can be had here: the text the
    cards keep, the default rules, the files at `places` (`rules_places`, read by the caller
    so that comparing reads no file); `shared_rules` takes the one of the recorded sha256."""
    if not cards.rules_file:
        return ()
    kept, name = cards.rules_yaml, cards.rules_file
    loads: list[Callable[[], LoadedRules]] = (
        [] if kept is None else [lambda: rules_from_text(kept, name)]
    )
    loads += [functools.partial(load_rules, path) for path in (DEFAULT_RULES, *places)]
    loaded = []
    for load in loads:
        try:
            loaded.append(load())
        except RulesError:  # an unreadable rules file only costs the crossings
            continue
    return tuple(loaded)


def shared_rules(
    baseline: CardFile,
    candidate: CardFile,
    known: tuple[LoadedRules, ...],
    warnings: list[str],
) -> LoadedRules | None:
    """The rules both sides were classified under, if they are one of the `known` files."""
    ids = [(side.rules_id, side.rules_sha256) for side in (baseline, candidate)]
    if ids[0] != ids[1]:
        warnings.append(
            f"the sides were classified under different rules (baseline {_rules_name(ids[0])},"
            f" candidate {_rules_name(ids[1])}): a changed verdict may be the rules' doing;"
            " --reclassify RULES judges both under one file"
        )
        return None
    for loaded in known:
        if loaded.sha256 == baseline.rules_sha256:
            return loaded
    if baseline.rules_id is not None:
        changed = [k.path for k in known if k.path != "default"]
        if baseline.rules_yaml is not None:
            where = "the rules text the cards keep is not the recorded one, or cannot be read"
        elif changed:
            where = f"{changed[0]} holds other rules now"
        else:
            where = (
                f"{baseline.rules_file} is neither beside the cards file, in a folder above it"
                " nor in the working folder"
            )
        warnings.append(
            f"rules {baseline.rules_id} not found to name the thresholds a flip crossed"
            f" ({where}); --reclassify RULES gives them"
        )
    return None


def _rules_name(ident: tuple[str | None, str | None]) -> str:
    rules_id, sha = ident
    if rules_id is None:
        return "none recorded (legacy cards)"
    return f"{rules_id} sha256 {str(sha)[:12]}"


def side_header(cards: CardFile, path: str, kept: list[Card]) -> SideHeader:
    gpu = first_gpu(c.gpu for c in kept)
    clocks = sm_clock_range(c.gpu for c in kept)
    if clocks:
        low, high = clocks
        gpu = gpu.model_copy(
            update={"sm_clock_ghz_min": round(low, 4), "sm_clock_ghz_max": round(high, 4)}
        )
    return SideHeader(
        path=path,
        source_format=cards.source_format,
        generated_at=cards.generated_at,
        tool_version=cards.tool_version,
        rules_id=cards.rules_id,
        rules_sha256=cards.rules_sha256,
        cards=len(kept),
        gpu=gpu,
        peaks=_peaks(k for c in kept for k in c.kernels),
        software=cards.captures[0].software() if cards.captures else Software(),
        projection=cards.projection.line() if cards.projection is not None else None,
    )


def _peaks(kernels: Iterable[KernelCard]) -> dict[str, float]:
    """Median ceilings over the kernels: TFLOP/s of each FLOP family used, TB/s of each level."""
    compute, bandwidth = median_ceilings(kernels)
    named = {f"{family}_tflops": v for family, v in compute.items()}
    named.update({f"{level}_tbps": v for level, v in bandwidth.items()})
    return {key: six_figures(value) for key, value in sorted(named.items())}


def gpu_warnings(baseline: SideHeader, candidate: SideHeader) -> list[str]:
    names = [_gpu_name(side) for side in (baseline, candidate)]
    sides = (("baseline", baseline), ("candidate", candidate))
    out = [
        f"{side} GPU is not recorded in its cards ({header.source_format} format)"
        for (side, header), name in zip(sides, names, strict=True)
        if name is None and header.cards
    ]
    before, after = baseline.software, candidate.software
    changed = [
        f"{key} {getattr(before, key)} -> {getattr(after, key)}"
        for key in Software.model_fields
        if getattr(before, key) != getattr(after, key) and before.holds() and after.holds()
    ]
    if changed:
        out.append("different software: " + ", ".join(changed))
    if None not in names and names[0] != names[1]:
        out.append(
            f"different GPUs: baseline {names[0]}, candidate {names[1]}; each percentage is of"
            " its own GPU's peak, and durations compare the machines"
        )
    return out


def _gpu_name(header: SideHeader) -> str | None:
    gpu = header.gpu
    if not gpu.name:
        return None
    return f"{gpu.name} ({'?' if gpu.sm_count is None else gpu.sm_count} SMs)"


def below_target_pairs(
    baseline: CardFile, candidate: CardFile, shapes: list[ShapeDiff], pairs: list[CardPair]
) -> tuple[list[ShapeDiff], list[str]]:
    """Shapes one side's capture left below its coverage target (`capture --coverage`) have no
    card there: the other side's cards of them are `below_target`, not added or removed (a
    change of the program, which `diff --fail-on any` fails on), and a warning says so per
    side. A card is one of them by its group, or by its shape as `diff` pairs cards of another
    setting (the group of TF32 off against TF32 on). Cards made before the shapes were listed
    (no `groups`) stay added or removed, and the warning says why."""
    out, marked = [], list(shapes)
    sides = (("baseline", baseline, "added"), ("candidate", candidate, "removed"))
    for side, cards, change in sides:
        unpaired = {s.stage for s in shapes if s.change == change}
        items = [
            (stage.stage, item)
            for stage in cards.coverage
            for item in stage.uncovered
            if item.why == BELOW_TARGET_WHY and stage.stage in unpaired
        ]
        if not items:
            continue
        listed = [(stage, group) for stage, item in items for group in item.groups or []]
        found = 0
        for number, (shape, pair) in enumerate(zip(marked, pairs, strict=True)):
            card = pair.baseline if change == "removed" else pair.candidate  # the one side's
            if shape.change == change and card and _below(shape.stage, card, listed):
                marked[number] = shape.model_copy(update={"change": "below_target"})
                found += 1
        below = "; ".join(
            f"{stage}: {item.name.strip('()').removesuffix(' below the coverage target')},"
            f" {'-' if item.real_us is None else f'{item.real_us / 1000:,.3f}'} ms"
            for stage, item in items
        )
        read = "below_target" if found else change
        out.append(
            f"the {side} was captured at a coverage target and left shapes below it ({below}):"
            f" they have no card there, so the other side's cards of them read as {read}, not"
            " as a change of the program; capture both sides at one --coverage to compare"
            " every shape"
        )
    return marked, out


def _below(stage: str, card: Card, listed: list[tuple[str, str]]) -> bool:
    """Whether `card` (shown under `stage`) is one of the shapes listed below a target."""
    for where, group in listed:
        if where != stage:
            continue
        if group == card.group:
            return True
        shape = _shape_of_id(group)
        if (
            shape is not None
            and shape[0] == card.op
            and same_shape(shape[1], card.shape_parameters)
        ):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _shape_of_id(group: str) -> tuple[str, Mapping[str, object]] | None:
    """The op and parameters a group id names, None for one that is not ours."""
    entry = parse_group_id(group)
    if entry is None:
        return None
    record = manifest_shape_of_id(entry)
    return record.op, record.shape_parameters


def marked_apart(
    baseline: CardFile, candidate: CardFile, shapes: list[ShapeDiff], pairs: list[CardPair]
) -> tuple[list[ShapeDiff], list[str]]:
    """The shapes with those below one side's coverage target and those one side captured
    light marked so (`below_target`, `captured_light`), and the warnings that say why."""
    shapes, below = below_target_pairs(baseline, candidate, shapes, pairs)
    shapes, light = light_pairs(shapes, pairs)
    return shapes, below + light


# the changes a verdict that differs between the sides reads as
_VERDICT_CHANGES = ("flipped", "within_noise", "missing_metric", "unclassified")


def light_pairs(
    shapes: list[ShapeDiff], pairs: list[CardPair]
) -> tuple[list[ShapeDiff], list[str]]:
    """Shapes one side captured with the light metric list (`capture --light-after`) and the
    other in full: a verdict that differs between them is `captured_light`, not a flip of the
    program (the light side's rules left unknown what needs sm_pct, l2_pct, hot units or
    FLOPs), and a warning says so per side. Both sides light compare like with like."""
    marked, mixed, read = list(shapes), {"baseline": 0, "candidate": 0}, dict.fromkeys("bc", 0)
    for number, (shape, pair) in enumerate(zip(shapes, pairs, strict=True)):
        base, cand = pair.baseline, pair.candidate
        if base is None or cand is None or bool(base.captured_light) == bool(cand.captured_light):
            continue
        side = "baseline" if base.captured_light else "candidate"
        mixed[side] += 1
        if shape.change in _VERDICT_CHANGES:
            why = shape.why.split("; thresholds unknown")[0] if shape.why else None
            why = f"{why}; the {side} was captured with the light metric list"
            marked[number] = shape.model_copy(update={"change": "captured_light", "why": why})
            read[side[0]] += 1
    said = [
        f"the {side} has {count} card{'s' if count > 1 else ''} captured with the light metric"
        f" list (capture --light-after) against full ones: {read[side[0]]} verdicts that differ"
        " read as captured_light, not as a change of the program (sm_pct, l2_pct, hot units and"
        " FLOPs were not measured there; its headroom counts them at their measured time);"
        " capture both sides with one --light-after to compare them"
        for side, count in mixed.items()
        if count
    ]
    return marked, said


def counted_apart(
    shapes: list[ShapeDiff], pairs: list[CardPair], kept: list[list[Card]]
) -> tuple[list[tuple[str, CardPair]], list[list[Card]]]:
    """The pairs (with their compared stage) and each side's cards that the roll-up and the
    headroom per stage count: all but the shapes below one side's coverage target, whose time
    is on the other side only (counted, a stage read as changed by what a capture skipped),
    and those whose verdict one side's light capture changed (`captured_light`)."""
    apart = {
        id(card)
        for shape, pair in zip(shapes, pairs, strict=True)
        if shape.change in ("below_target", "captured_light")
        for card in (pair.baseline, pair.candidate)
        if card is not None
    }
    staged = [
        (shape.stage, pair)
        for shape, pair in zip(shapes, pairs, strict=True)
        if shape.change not in ("below_target", "captured_light")
    ]
    return staged, [[card for card in side if id(card) not in apart] for side in kept]
