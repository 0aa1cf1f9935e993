"""Is a split capture whole? The shards of one shapes file given to classify, and the missing.

Every capture manifest records its shard (`K/N`), how the shards were chosen and the sha256 of
its shapes file. Captures of one file split the same way belong together; any K of 1..N that
none of them holds is a shard whose shapes have no card. Captures of another shapes file (or
another split) form a set of their own, so a stray folder is named too. A set that holds a
capture read in part (reports given as files, `parts`) was not asked for whole: no shard of it
is missing.
"""

from __future__ import annotations

from pathlib import Path

from ..core.paths import shown_under
from .inputs import ReportSet

# a set of shards: shapes file sha256, shard count, shard method, drilled cards sha256
Key = tuple[str, int, str, str | None]


def missing_shards(
    report_sets: list[ReportSet], partial: bool = False, named: dict[Path, str] | None = None
) -> list[str]:
    """One line per set of shards (same shapes file, split the same way) that lacks some: an
    error that says how to go on, or with `partial` (classify --partial) a warning that says
    what the cards lack. `named`: the inputs as outputs name them (`core.paths.shown_under`)."""
    sets: dict[Key, dict[int, list[str]]] = {}
    in_part: set[Key] = set()
    for report_set in report_sets:
        manifest = report_set.manifest
        if manifest is None or report_set.manifest_path is None:
            continue
        index, count = (int(part) for part in manifest.shard.split("/"))
        drill = manifest.drill_down.cards_sha256 if manifest.drill_down else None
        key: Key = (manifest.shapes_sha256, count, manifest.shard_method, drill)
        if report_set.part:
            in_part.add(key)
        folder = shown_under(report_set.manifest_path.parent, named or {})
        sets.setdefault(key, {}).setdefault(index, []).append(folder)
    lines = []
    for key, found in sets.items():
        sha256, count, method, _ = key
        absent = [k for k in range(1, count + 1) if k not in found]
        if not absent or key in in_part:
            continue
        folders = ", ".join(f for k in sorted(found) for f in found[k])
        shapes_file = next(
            s.manifest.shapes_file
            for s in report_sets
            if s.manifest and s.manifest.shapes_sha256 == sha256
        )
        listed = ", ".join(f"{k}/{count}" for k in absent)
        lines.append(
            f"{folders}: shard{'s' if len(absent) > 1 else ''} {listed} of {shapes_file}"
            f" (sha256 {sha256[:12]}, {method} shards) not given: the cards lack"
            f" {'their' if len(absent) > 1 else 'its'} shapes"
            + (
                " (accepted: --partial)"
                if partial
                else "; give every shard's folder, or pass --partial to accept the cards of"
                " these alone"
            )
        )
    return lines
