"""What classify reads: files and folders expanded into report sets before any report opens.

Folders are searched recursively (hidden folders such as a capture's `.work` are skipped, and so
are links to folders, which could loop); a folder that holds a capture `manifest.json` is one
report set with its manifest and is not searched further; reports of one given as files are one
report set of that capture read in part (`parts`). The same report reached twice is read once,
with a warning. Reports of other people's runs that share a name (`profile.ncu-rep` is the
commonest) get labels that tell them apart, so their cards never merge into one stage.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.manifest import MANIFEST_NAME, Manifest, read_manifest
from ..cards.headroom import is_reserved_stage
from ..cards.machine import CaptureInfo
from ..core.errors import ManifestError
from ..core.facts import Machine
from ..core.ordering import natural_key
from ..core.paths import short_names
from ..core.text import unicode_safe
from ..core.textio import not_regular, os_reason
from ..read.names import REPORT_SUFFIXES, report_stem
from .parts import manifest_beside, named_stems, part_warning, unreadable_manifest


def is_report(path: Path) -> bool:
    """True for a file name classify reads as an Nsight Compute report."""
    return path.name.endswith(REPORT_SUFFIXES)


@dataclass
class ReportSet:
    """Reports to read, with the capture manifest of their folder when there is one."""

    reports: list[Path]
    manifest_path: Path | None = None
    manifest: Manifest | None = None
    # report stem -> the error line of a report named there that cannot be read (missing, a
    # FIFO, a folder, a dangling link): the shapes of a capture that live in it say so
    problems: dict[str, str] = field(default_factory=dict)
    # the folder searched whose reports these are, where it holds no manifest.json
    folder: Path | None = None
    part: bool = False  # reports of a capture folder given as files: read in part (`parts`)


@dataclass
class Inputs:
    """Everything classify was asked to read, and what was wrong with the request."""

    report_sets: list[ReportSet] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    labels: dict[Path, str] = field(default_factory=dict)  # report -> its stage label

    def reports(self) -> list[Path]:
        """Every report to read, in input order."""
        return [p for s in self.report_sets for p in s.reports]


def find_inputs(paths: Iterable[Path]) -> Inputs:
    """Sources of `paths` without opening any file: bad paths become error lines. A report is
    read once: captures claim theirs first (their manifest gives it meaning), then captures read
    in part, then loose reports in the order given."""
    inputs = Inputs()
    found = _merged_parts([s for path in paths for s in _report_sets_of(path, inputs)])
    # a bad input given alone and in a folder searched (or twice) has one line
    inputs.errors = list(dict.fromkeys(inputs.errors))
    seen: dict[tuple[int, int], Path] = {}
    for report_set in sorted(found, key=lambda s: (not s.manifest_path, s.part)):
        _add_unique(report_set, inputs, seen)
    order = {id(report_set): n for n, report_set in enumerate(found)}
    inputs.report_sets.sort(key=lambda s: order.get(id(s), len(found)))
    inputs.labels = report_labels(inputs.reports())
    return inputs


def input_files(paths: Iterable[Path]) -> list[Path]:
    """Every file classify would read for `paths` (reports and manifests)."""
    inputs = find_inputs(paths)
    manifests = [s.manifest_path for s in inputs.report_sets if s.manifest_path]
    return [*inputs.reports(), *manifests]


def collect_inputs(paths: Iterable[Path]) -> Inputs:
    """`find_inputs`, with every capture manifest read and validated (ManifestError if bad:
    a capture whose manifest cannot be trusted must not be half-classified; a report given as
    a file beside one is read as a loose report instead, with a warning)."""
    inputs = find_inputs(paths)
    for report_set in list(inputs.report_sets):
        if report_set.part:
            _read_part(report_set, inputs)
        elif report_set.manifest_path is not None:
            report_set.manifest = read_manifest(report_set.manifest_path)
            inputs.errors += _missing_reports(report_set)
            inputs.warnings += _unlisted_reports(report_set)
    return inputs


def _unlisted_reports(report_set: ReportSet) -> list[str]:
    """A warning per report in a capture folder that its manifest names nowhere (no batch
    wrote it, no shape lives in it: copied in from elsewhere): its cards are loose ones."""
    assert report_set.manifest is not None and report_set.manifest_path is not None
    named = named_stems(report_set.manifest)
    return [
        f"{report}: in the capture folder but not named by its manifest.json: read as a loose"
        " report, its cards beside the capture's"
        for report in report_set.reports
        if report_stem(report) not in named
    ]


def _read_part(report_set: ReportSet, inputs: Inputs) -> None:
    """The manifest of a capture read in part, a warning per report: one it names nowhere is
    loose (as in the folder); none named, or a bad manifest, and the set is loose."""
    assert report_set.manifest_path is not None
    try:
        manifest = read_manifest(report_set.manifest_path)
    except ManifestError as exc:
        why = str(exc).replace(str(report_set.manifest_path), MANIFEST_NAME, 1)
        inputs.warnings += [unreadable_manifest(r, why) for r in report_set.reports]
        report_set.manifest_path, report_set.part = None, False
        return
    named = named_stems(manifest)
    inputs.warnings += [part_warning(r, named) for r in report_set.reports]
    if any(report_stem(r) in named for r in report_set.reports):
        report_set.manifest = manifest
    else:
        report_set.manifest_path, report_set.part = None, False


def _missing_reports(report_set: ReportSet) -> list[str]:
    """An error line per report the manifest names for its captured shapes that the folder
    does not hold (deleted, renamed), each recorded in `report_set.problems`."""
    assert report_set.manifest is not None and report_set.manifest_path is not None
    present = {report_stem(p) for p in report_set.reports} | set(report_set.problems)
    counts: dict[str, int] = {}
    for shape in report_set.manifest.shapes:
        named = [shape.report] if shape.status == "ok" else []
        if shape.times_status == "ok":  # the repeats of capture --repeat
            named.append(shape.times_report)
        for name in named:
            if name and report_stem(name) not in present:
                counts[name] = counts.get(name, 0) + 1
    lines = []
    for name, count in counts.items():
        line = (
            f"{report_set.manifest_path.parent / name}: missing: the capture's manifest.json names"
            f" it for {count} captured shape{'s' if count > 1 else ''}"
        )
        report_set.problems[report_stem(name)] = line
        lines.append(line)
    return lines


def _report_sets_of(path: Path, inputs: Inputs) -> Iterator[ReportSet]:
    errors = inputs.errors
    if path.is_dir():
        found = list(_walk(path, inputs))
        if not found:
            errors.append(f"{path}: folder holds no Nsight Compute report (searched recursively)")
        yield from found
    elif is_report(path) and (path.exists() or path.is_symlink()):
        # a report name that is no regular file (a FIFO, a device, a dangling link) has the
        # line it has when a folder searched holds it: one line, however it was reached
        line = _unreadable(path)
        if line is None:  # beside the manifest of its capture: read as a part of it
            beside = manifest_beside(path)
            yield ReportSet([path], beside, part=beside is not None)
        else:
            errors.append(line)
    elif path.exists():
        kind = "not a regular file" if not path.is_file() else "not a report"
        errors.append(f"{path}: {kind} (expected {', '.join(REPORT_SUFFIXES)} or a folder)")
    elif path.is_symlink():  # dangling, or a loop of links
        errors.append(f"{path}: cannot read: {_stat_reason(path)}")
    else:
        errors.append(f"{path}: no such file or folder")


def _walk(folder: Path, inputs: Inputs) -> Iterator[ReportSet]:
    """One report set per folder that holds reports or a manifest, folders and reports in natural
    order (n2 before n10); reports in folders under a capture folder are not read, with a
    warning."""
    errors = inputs.errors

    def unlistable(exc: OSError) -> None:
        errors.append(f"{exc.filename}: cannot list: {exc.strerror or exc}")

    for root, dirs, files in os.walk(folder, onerror=unlistable):
        here = Path(root)
        named = sorted(
            (here / n for n in [*files, *dirs] if is_report(Path(n))),
            key=lambda p: natural_key(p.name),
        )
        bad = {p: line for p in named if (line := _unreadable(p)) is not None}
        errors.extend(bad.values())
        problems = {report_stem(p): line for p, line in bad.items()}
        dirs[:] = sorted(
            (d for d in dirs if not d.startswith(".") and not is_report(Path(d))), key=natural_key
        )
        reports = [p for p in named if p not in bad]
        if MANIFEST_NAME in files or MANIFEST_NAME in dirs:  # a folder there: refused as one
            inputs.warnings += _unread_below(here, [d for d in dirs if d != MANIFEST_NAME])
            dirs[:] = []  # a capture folder is one report set
            yield ReportSet(reports, here / MANIFEST_NAME, problems=problems)
        elif reports:
            yield ReportSet(reports, problems=problems, folder=here)


def _unread_below(capture: Path, folders: list[str]) -> list[str]:
    """A warning per folder under a capture folder that holds reports (a capture folder is one
    report set, read by its manifest: they would be read by no one)."""
    lines = []
    for name in folders:
        count = 0
        for _, dirs, files in os.walk(capture / name):
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # skipped as everywhere
            count += sum(1 for n in [*files, *dirs] if is_report(Path(n)))
        if count:
            lines.append(
                f"{capture / name}: {count} report{'s' if count > 1 else ''} inside the capture"
                f" folder {capture}, which is read by its manifest.json: not read (give"
                " this folder itself to read them)"
            )
    return lines


def _stat_reason(path: Path) -> str:
    """Why `path` cannot be followed (a dangling link, a loop of links)."""
    try:
        path.stat()
    except OSError as exc:
        return os_reason(path, exc)
    return "cannot be read"


def _unreadable(path: Path) -> str | None:
    """The error line of a report name in a folder that is no regular file (a FIFO would hang
    the reader, a folder or dangling link cannot be read), or None."""
    try:
        why = not_regular(path.stat().st_mode)
    except OSError as exc:
        why = os_reason(path, exc)
    return None if why is None else f"{path}: cannot read: {why}"


def _merged_parts(found: list[ReportSet]) -> list[ReportSet]:
    """`found` with the reports of one capture folder given as files in one set (the first's
    place): a capture read in part is one set, however many of its reports were given."""
    first: dict[object, ReportSet] = {}
    merged = []
    for report_set in found:
        if report_set.part and report_set.manifest_path is not None:
            key = _identity(report_set.manifest_path) or report_set.manifest_path
            if key in first:
                first[key].reports += report_set.reports
                continue
            first[key] = report_set
        merged.append(report_set)
    return merged


def _add_unique(report_set: ReportSet, inputs: Inputs, seen: dict[tuple[int, int], Path]) -> None:
    """Add `report_set` without the reports (or capture) already added; warn about each repeat.
    A capture read in part whose reports were all added (its folder given too) is dropped."""
    if report_set.manifest_path is not None and not report_set.part:
        key = _identity(report_set.manifest_path)
        if key is not None and key in seen:
            inputs.warnings.append(
                f"{report_set.manifest_path}: the same capture given twice; read once"
            )
            return
        if key is not None:
            seen[key] = report_set.manifest_path
    unique = []
    for report in report_set.reports:
        key = _identity(report)
        if key is not None and key in seen:
            inputs.warnings.append(
                f"{report}: given more than once (alone, in a folder or by a link); read once"
            )
            continue
        if key is not None:
            seen[key] = report
        unique.append(report)
    if unique or (report_set.manifest_path and not report_set.part):
        report_set.reports = unique
        inputs.report_sets.append(report_set)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def report_labels(reports: list[Path]) -> dict[Path, str]:
    """Stage label of each report: its stem (`profile`), or, where stems clash, the stem with
    as many parent folder names as tell the reports apart (`runA/profile`, `runB/profile`); a
    stem in parentheses, which would read as the overall row, its file name instead."""
    by_stem: dict[str, list[Path]] = {}
    for report in reports:
        by_stem.setdefault(report_stem(report), []).append(report)
    labels: dict[Path, str] = {}
    for stem, members in by_stem.items():
        if len(members) == 1:  # a stem in parentheses names an overall row: the file's name
            labels[members[0]] = members[0].name if is_reserved_stage(stem) else stem
            continue
        parts = [Path(os.path.abspath(p)).parent.parts for p in members]
        for depth in range(1, max(len(p) for p in parts) + 1):
            names = ["/".join([*p[len(p) - depth :], stem]) for p in parts]
            if len(set(names)) == len(names):
                break
        else:  # same folder, same stem, other suffixes: the suffixes tell them apart
            names = short_names(members)
        labels.update(zip(members, names, strict=True))
    return labels


def capture_environments(report_sets: list[ReportSet]) -> list[CaptureInfo]:
    """What each capture ran on, from its manifest, its folder named as from any working
    folder (`short_names`): for report headers and cross-run diffs."""
    folders = short_names([s.manifest_path.parent for s in report_sets if s.manifest_path])
    return [capture_environment(s, f) for s, f in zip(report_sets, folders, strict=True)]


def capture_environment(report_set: ReportSet, folder: str) -> CaptureInfo:
    """What a capture ran on, from its manifest: for report headers and cross-run diffs."""
    manifest = report_set.manifest
    assert manifest is not None
    host = manifest.host
    driver = next((g.get("driver") for g in host.gpus if g.get("driver")), None)
    machine = {name: None for name in Machine.model_fields} | {"driver": driver}
    return CaptureInfo(
        folder=unicode_safe(folder),
        created_at=manifest.created_at,
        shapes_file=manifest.shapes_file,
        **(machine | host.machine()),
        capture_tool_version=manifest.tool_version,
    )
