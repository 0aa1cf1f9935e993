"""A recording as a shapes file: every shape validated as capture will validate it (what
the replay refuses moves to `unreplayable`, shapes with one group id merge), written as YAML
people can read and diff."""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.text import counted, unicode_safe
from ..shapes.aten import AtenShape
from ..shapes.file import Shape
from ..shapes.recorded import Recorded, RecordedTotals, UncoveredCall
from .chain_section import chain_section, chains_yaml, shape_names
from .recorder import Recorder
from .shapes_document import CallShape, ShapesDocument, shape_kinds
from .totals import NAMES_KEPT


def validated_document(recorder: Recorder, command: str, inputs_prefix: str = "") -> ShapesDocument:
    """The shapes document, each call the recorder described built into its shapes-file model
    as capture will validate it: a shape the replay cannot take (a dimension it refuses) moves
    to the uncovered work, with its time; typed shapes that come out with one group id (a
    matmul and a linear of one size) merge, adding their calls; device ops are named by their
    readable id (numbered where two read alike). The per-stage totals are summed last, from
    what the file holds."""
    from pydantic import TypeAdapter, ValidationError

    from ..shapes.file import group_id
    from .totals import stage_totals

    described = recorder.described_calls(command, inputs_prefix)
    totals = _totals(described.recorded)
    adapter: TypeAdapter[Shape] = TypeAdapter(Shape)
    stages: dict[str, dict[str, Shape]] = {}
    for stage, calls in described.stages.items():
        kept = stages.setdefault(stage, {})
        for call in calls:
            try:
                shape = adapter.validate_python(call, strict=False)
            except ValidationError as exc:
                totals.uncovered.append(_refused(stage, call, exc.errors()[0]["msg"]))
                continue
            if isinstance(shape, AtenShape):
                shape.name = _numbered(shape.readable(), kept, stage)
                kept[f"{stage}:{shape.name}"] = shape
            else:
                _merge(kept, group_id(stage, shape), shape)
    document = ShapesDocument(
        recorded=described.recorded,
        stages={stage: list(kept.values()) for stage, kept in stages.items() if kept},
    )
    totals.uncovered.sort(key=lambda u: (-(u.kernel_us or 0), -u.calls, u.name))
    totals.stages = stage_totals(document.stages, totals.uncovered, described.copies)
    document.chains = chain_section(recorder, document)
    document.recorded.cuda_graphs = recorder.cuda_graphs.notes(shape_names(recorder, document))
    return document


def _totals(recorded: Recorded) -> RecordedTotals:
    """The recording's time ledger (a recorder always writes one)."""
    totals = recorded.totals
    assert totals is not None, "a recorder's document always holds its totals"
    return totals


def _refused(stage: str, call: CallShape, problem: str) -> UncoveredCall:
    """A call the replay refuses, as uncovered work with the time it took."""
    item = UncoveredCall(
        stage=stage,
        name=call.get("overload") or call["op"],
        why=f"refused by the replay: {problem}",
        calls=call["calls"],
    )
    if "real_us" in call:
        item.kernels = round(call["real_kernels"] * call["calls"])
        item.kernel_us = round(call["real_us"] * call["calls"], 3)
    return item


def _numbered(readable: str, kept: dict[str, Shape], stage: str) -> str:
    """The readable id, with `:2`, `:3`... where an earlier op of the stage reads alike."""
    name, number = readable, 1
    while f"{stage}:{name}" in kept:
        number += 1
        name = f"{readable}:{number}"
    return name


def _merge(kept: dict[str, Shape], gid: str, shape: Shape) -> None:
    """Keep a typed shape under its group id, or add its calls, sources and real kernel time
    (weighted by calls) to the one already there."""
    first = kept.get(gid)
    if first is None:
        kept[gid] = shape
        return
    calls = first.calls + shape.calls
    if first.real_us is not None and shape.real_us is not None:
        weighted = first.real_us * first.calls + shape.real_us * shape.calls
        first.real_us = round(weighted / calls, 4)
    if first.real_kernels is not None and shape.real_kernels is not None:
        weighted = first.real_kernels * first.calls + shape.real_kernels * shape.calls
        first.real_kernels = round(weighted / calls, 4)
    if first.real_kernel_names is not None and shape.real_kernel_names is not None:
        first.real_kernel_names = _merged_names(first, shape)
    first.calls = first.real_calls = calls
    sources = (first.source or "").split(", ")
    sources += [s for s in (shape.source or "").split(", ") if s not in sources]
    first.source = ", ".join(sources)


def _merged_names(first: Shape, shape: Shape) -> dict[str, float]:
    """Two shapes' kernel names -> launches per call, as one shape of both their calls."""
    launches: dict[str, float] = {}
    for part in (first, shape):
        for name, per_call in (part.real_kernel_names or {}).items():
            launches[name] = launches.get(name, 0.0) + per_call * part.calls
    calls = first.calls + shape.calls
    kept = sorted(launches, key=lambda name: (-launches[name], name))[:NAMES_KEPT]
    return {name: round(launches[name] / calls, 4) for name in kept}


def shapes_yaml(document: ShapesDocument) -> str:
    """A recorded shapes document as YAML people can read and diff: one flow mapping per shape
    (JSON scalars are YAML scalars), per stage total and per line of uncovered work."""
    recorded = document.recorded
    totals = _totals(recorded)
    dumps = _yaml_scalar
    shapes = _flat(document)
    lines = [
        f"# Recorded by ncu-classify {recorded.tool_version}:"
        f" {counted(len(shapes), 'distinct shape')}"
        f" ({shape_kinds(shapes)}),"
        f" {counted(sum(s.calls for s in shapes), 'call')};"
        f" {counted(len(totals.uncovered), 'kind')} of"
        " device work not covered (recorded.totals.uncovered).",
        "# Edit freely: a shape's `calls` weighs its time in the summaries (coverage keeps"
        " `real_calls`, the calls recorded).",
        f"seed: {document.seed}",
        f"warmup: {document.warmup}",
        f"cudnn_benchmark: {json.dumps(document.cudnn_benchmark)}",
        "recorded:",
        f"  command: {dumps(recorded.command)}",
        f"  tool_version: {dumps(recorded.tool_version)}",
        f"  torch: {dumps(recorded.torch)}",
        f"  device: {dumps(recorded.device)}",
        "  totals:",
        f"    basis: {dumps(totals.basis)}",
    ]
    if totals.setup_kernel_us is not None:
        lines.append(f"    setup_kernel_us: {dumps(totals.setup_kernel_us)}")
    lines.append("    stages:" + ("" if totals.stages else " {}"))
    lines += [
        f"      {dumps(stage)}: {dumps(t.model_dump(exclude_none=True))}"
        for stage, t in totals.stages.items()
    ]
    lines.append("    uncovered:" + ("" if totals.uncovered else " []"))
    lines += ["      - " + dumps(item.model_dump(exclude_none=True)) for item in totals.uncovered]
    if recorded.compiled is not None:  # torch.compile'd regions: graphs, recompiles, breaks
        lines.append(f"  compiled: {dumps(recorded.compiled.model_dump(exclude_none=True))}")
    if recorded.cuda_graphs:  # CUDA graphs: what each holds, its replays and their time
        lines.append("  cuda_graphs:")
        lines += ["    - " + dumps(note.model_dump()) for note in recorded.cuda_graphs]
    lines.append("stages:")
    for stage, members in document.stages.items():
        lines.append(f"  {dumps(stage)}:")  # quoted: a stage named `null` or `123` stays text
        lines += [
            "    - {" + ", ".join(f"{k}: {dumps(v)}" for k, v in shape.written().items()) + "}"
            for shape in members
        ]
    lines += chains_yaml(document.chains, dumps)
    return "\n".join(lines) + "\n"


# Characters a YAML double-quoted scalar must not hold raw (DEL, C1 controls, line and
# paragraph separators, bidi controls): written as \\uXXXX escapes. C0 controls JSON escapes.
_YAML_UNSAFE = re.compile(
    "[\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _yaml_scalar(value: Any) -> str:
    """A JSON scalar or list as YAML flow text; strings keep their non-ASCII characters (YAML
    would read a JSON surrogate pair as two lone surrogates) but never a raw control. Bytes of
    the program's arguments or paths that are not UTF-8 (lone surrogates, which no UTF-8 file
    holds) are written as the text `\\xff`, as the tool prints them."""
    text = json.dumps(value, ensure_ascii=False)
    text = _SURROGATE.sub(lambda m: json.dumps(unicode_safe(m.group()))[1:-1], text)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _flat(document: ShapesDocument) -> list[Shape]:
    """Every shape of the document, stage after stage."""
    return [shape for shapes in document.stages.values() for shape in shapes]
