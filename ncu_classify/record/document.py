"""A recording as a shapes file: every shape validated as capture will validate it (what
the replay refuses moves to `unreplayable`, shapes with one group id merge), written as YAML
people can read and diff."""

from __future__ import annotations

import json
import re
from typing import Any

from .recorder import Recorder


def validated_document(recorder: Recorder, command: str, inputs_prefix: str = "") -> dict[str, Any]:
    """The shapes document with every shape validated as the shapes file will be: a shape the
    replay cannot take (a dimension it refuses) moves to `unreplayable`; shapes that come out
    with one group id (a matmul and a linear of one size) merge, adding their calls."""
    from pydantic import TypeAdapter, ValidationError

    from ..capture.ops import Shape
    from ..capture.shapes import group_id

    document = recorder.shapes_document(command, inputs_prefix)
    adapter: TypeAdapter[Any] = TypeAdapter(Shape)
    unreplayable: dict[str, int] = document["recorded"]["unreplayable"]
    stages: dict[str, dict[str, dict[str, Any]]] = {}
    for stage, shapes in document["stages"].items():
        for shape in shapes:
            try:
                gid = group_id(stage, adapter.validate_python(shape, strict=False))
            except ValidationError as exc:
                problem = exc.errors()[0]["msg"]
                name = f"{shape['op']} (refused by the replay: {problem})"
                unreplayable[name] = unreplayable.get(name, 0) + shape["calls"]
                continue
            kept = stages.setdefault(stage, {})
            if gid in kept:
                first = kept[gid]
                first["calls"] += shape["calls"]
                sources = first["source"].split(", ")
                sources += [s for s in shape["source"].split(", ") if s not in sources]
                first["source"] = ", ".join(sources)
            else:
                kept[gid] = shape
    document["recorded"]["unreplayable"] = dict(sorted(unreplayable.items()))
    document["stages"] = {stage: list(kept.values()) for stage, kept in stages.items()}
    return document


def shapes_yaml(document: dict[str, Any]) -> str:
    """A recorded shapes document as YAML people can read and diff: one flow mapping per shape
    (JSON scalars are YAML scalars), the ops it could not replay one per line."""
    recorded = document["recorded"]
    ops = recorded.get("ops") or []
    dumps = _yaml_scalar
    lines = [
        f"# Recorded by ncu-classify {recorded['tool_version']}: {len(_flat(document))} distinct"
        f" shapes, {sum(s['calls'] for s in _flat(document))} calls; {len(ops)} other device"
        f" ops, {sum(op['calls'] for op in ops)} calls.",
        "# Edit freely: a shape's `calls` weighs its time in the summaries.",
        f"seed: {document['seed']}",
        f"warmup: {document['warmup']}",
        f"cudnn_benchmark: {json.dumps(document['cudnn_benchmark'])}",
        "recorded:",
        f"  command: {dumps(recorded['command'])}",
        f"  tool_version: {dumps(recorded['tool_version'])}",
        f"  torch: {dumps(recorded['torch'])}",
        f"  device: {dumps(recorded['device'])}",
    ]
    unreplayable = recorded["unreplayable"]
    lines.append("  unreplayable:" + ("" if unreplayable else " {}"))
    lines += [f"    {dumps(name)}: {count}" for name, count in unreplayable.items()]
    lines.append("  ops:" + ("" if ops else " []"))  # every other device op, one per line
    lines += ["    - " + _yaml_scalar(op) for op in ops]
    lines.append("stages:")
    for stage, shapes in document["stages"].items():
        lines.append(f"  {dumps(stage)}:")  # quoted: a stage named `null` or `123` stays text
        lines += [
            "    - {" + ", ".join(f"{k}: {dumps(v)}" for k, v in shape.items()) + "}"
            for shape in shapes
        ]
    return "\n".join(lines) + "\n"


# Characters a YAML double-quoted scalar must not hold raw (DEL, C1 controls, line and
# paragraph separators, bidi controls): written as \\uXXXX escapes. C0 controls JSON escapes.
_YAML_UNSAFE = re.compile(
    "[\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


def _yaml_scalar(value: Any) -> str:
    """A JSON scalar or list as YAML flow text; strings keep their non-ASCII characters (YAML
    would read a JSON surrogate pair as two lone surrogates) but never a raw control."""
    text = json.dumps(value, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _flat(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [shape for shapes in document["stages"].values() for shape in shapes]
