"""A recording's chains as the shapes file writes them (`chains:`, per stage): each named by
its ops and first input (`vae:chain:add+native_group_norm+silu+constant_pad_nd:1x128x3x10x10:fp32`,
numbered where two read alike), its heavy neighbours and input origins by the group ids of the
shapes the file holds, and the program's kernel time per call (its ops' summed) when timed.
Written as YAML people can read, after the stages. No torch here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..shapes.aten import AtenShape
from ..shapes.chains import Chain, ChainOutput, View
from .chains import ChainRecord, identity

if TYPE_CHECKING:
    from .recorder import Recorder
    from .shapes_document import ShapesDocument

SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}
NAMED_OPS = 4  # ops named in a chain's id; more are counted
_ADAPTER: list[Any] = [None]  # the shapes' validator, built once


def chain_section(recorder: Recorder, document: ShapesDocument) -> dict[str, list[Chain]]:
    """The chains of the recording per stage (empty without a dataflow or chains), its
    references named after the shapes of `document` (validated: its names are final). A chain
    the shapes-file model refuses is kept by name and calls, with the reason (`untied`)."""
    flow = recorder.flow
    if flow is None:
        return {}
    names = shape_names(recorder, document)
    totals = document.recorded.totals
    timed = totals is not None and totals.basis == "kernel_time"
    per_mark = recorder.clock.kernel_times()[0] if timed else None
    chain_names: dict[int, str] = {}
    taken: set[str] = set()
    for record in flow.chains.records.values():
        readable = f"{record.stage}:chain:{_readable(record)}"
        name, number = readable, 1
        while name in taken:
            number += 1
            name = f"{readable}:{number}"
        taken.add(name)
        chain_names[id(record)] = name
    stages: dict[str, list[Chain]] = {}
    for record in flow.chains.records.values():
        try:
            chain = Chain.model_validate(_chain(record, chain_names, names, per_mark), strict=False)
        except ValidationError as exc:
            why = f"refused by the shapes file's model: {exc.errors()[0]['msg']}"
            chain = Chain(name=chain_names[id(record)], calls=record.calls, untied=[why])
        stages.setdefault(record.stage, []).append(chain)
    if flow.stopped is not None:
        stage, problem = flow.stopped
        why = f"the dataflow stopped here ({problem}): later chains are not kept"
        stopped = Chain(name=f"{stage}:chain:dataflow-stopped", calls=1, untied=[why])
        stages.setdefault(stage, []).append(stopped)
    for stage, calls in flow.chains.beyond.items():
        why = "beyond the recording's cap of distinct chains: not kept"
        beyond = Chain(name=f"{stage}:chain:beyond-cap", calls=calls, untied=[why])
        stages.setdefault(stage, []).append(beyond)
    return stages


def shape_names(recorder: Recorder, document: ShapesDocument) -> dict[tuple[str, str], str]:
    """("shape", typed entry key) and ("op", op identity) -> the group id the file gives it."""
    from pydantic import TypeAdapter, ValidationError

    from ..shapes.file import Shape, group_id

    adapter = _ADAPTER[0] = _ADAPTER[0] or TypeAdapter(Shape)
    names: dict[tuple[str, str], str] = {}
    for key, entry in recorder.recording.entries.items():
        try:
            names[("shape", key)] = group_id(entry.stage, adapter.validate_python(entry.shape))
        except ValidationError:
            names[("shape", key)] = f"{entry.stage}:{entry.shape['op']}"
    for stage, shapes in document.stages.items():
        for shape in shapes:
            if isinstance(shape, AtenShape):
                op = identity(stage, shape.overload, shape.args, shape.kwargs)
                names[("op", op)] = f"{stage}:{shape.name}"
    return names


def _readable(record: ChainRecord) -> str:
    """The work ops' names (views left out) and the first input's dims and dtype."""
    ops = [op["overload"].split(".")[1] for op in record.ops]
    ops = [op for op in ops if op not in _VIEWS] or ops
    named = "+".join(ops if len(ops) <= NAMED_OPS else [*ops[:3], f"{len(ops) - 3}more"])
    first = record.inputs[0] if record.inputs else None
    if first is None:
        return named
    dims = "x".join(map(str, first["shape"])) or "scalar"
    return f"{named}:{dims}:{SHORT.get(first['dtype'], first['dtype'])}"


_VIEWS = frozenset(
    {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "unsqueeze",
     "squeeze", "slice", "select", "as_strided", "alias", "detach", "unflatten", "split",
     "split_with_sizes", "chunk", "narrow", "view_as_real", "view_as_complex", "unbind",
     "diagonal", "_reshape_alias", "lift_fresh", "movedim", "flatten", "contiguous"}
)  # fmt: skip


def _chain(
    record: ChainRecord,
    chain_names: dict[int, str],
    names: dict[tuple[str, str], str],
    per_mark: Any,
) -> Any:
    """One chain as data, for the shapes file's model."""

    def named(origin: tuple[Any, ...]) -> str:
        if origin[0] == "named":
            return str(origin[1])
        if origin[0] == "heavy":
            return _heavy(origin[1], names)
        if origin[0] == "chain":
            return f"{chain_names[id(origin[1])]} op {origin[2]}"
        return names.get(("op", identity(*origin[1:])), str(origin[2]))

    item = {
        "name": chain_names[id(record)],
        "calls": record.calls,
        "source": ", ".join(record.sources),
        "after": [_heavy(h, names) for h in record.after],
        "before": [_heavy(h, names) for h in record.before],
    }
    if per_mark is not None:
        times = [per_mark[m] for m in record.marks if m in per_mark]
        item["real_us"] = round(sum(t.ns for t in times) / 1000 / record.calls, 4)
        item["real_kernels"] = round(sum(t.kernels for t in times) / record.calls, 4)
    if record.untied:
        item["untied"] = record.untied
    item["inputs"] = [
        {"tensor": spec, "from": [named(o) for o in origins]}
        for spec, origins in zip(record.inputs, record.origins, strict=True)
    ]
    ops = []
    for op, ident in zip(record.ops, record.identities, strict=True):
        shape = names.get(("op", ident))
        ops.append({**op, "shape": shape} if shape else op)
    item["ops"] = ops
    item["outputs"] = [
        ChainOutput(ref=[op, out], as_strided=_view(view)).model_dump()
        for op, out, view in sorted(record.leaving)
    ]
    return item


def _heavy(heavy: tuple[str, str], names: dict[tuple[str, str], str]) -> str:
    """A heavy op's group id; a heavy call no shape stands for by its name (`linear`)."""
    return names.get(heavy, heavy[1] if heavy[0] == "call" else heavy[0])


def chains_yaml(chains: dict[str, list[Chain]], dumps: Callable[[Any], str]) -> list[str]:
    """The `chains:` section as YAML lines (none when there are no chains): a block mapping per
    chain, one flow mapping per input and op."""
    if not chains:
        return []
    lines = ["chains:"]
    for stage, items in chains.items():
        lines.append(f"  {dumps(stage)}:")
        for chain in items:
            data = chain.model_dump(by_alias=True, exclude_none=True)
            if not chain.untied:
                del data["untied"]
            for op in data["ops"]:
                if not op["kwargs"]:
                    del op["kwargs"]
            for number, key in enumerate(k for k in Chain.model_fields if k in data):
                lead = "      " if number else "    - "
                alias = "from" if key == "origins" else key
                value = data[key]
                if key in ("inputs", "ops") and value:
                    lines.append(f"{lead}{alias}:")
                    lines += [f"        - {_flow(entry, dumps)}" for entry in value]
                else:
                    lines.append(f"{lead}{alias}: {dumps(value)}")
    return lines


def _flow(mapping: Any, dumps: Callable[[Any], str]) -> str:
    """One mapping as a YAML flow mapping of JSON values."""
    return "{" + ", ".join(f"{k}: {dumps(v)}" for k, v in mapping.items()) + "}"


def _view(view: tuple[Any, ...]) -> View | None:
    """The view a chain output's reader took, when it took another (`()`: none)."""
    if not view:
        return None
    shape, strides, offset = view
    return View(shape=list(shape), strides=list(strides), offset=offset)
