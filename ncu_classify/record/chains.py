"""Chains from the dataflow (`dataflow`): the nodes of a segment (the ops between two heavy
ops) that tensors link become one chain when two or more of them do work; its ops' tensor
arguments are linked (`{"input": k}` for what it takes from outside, `{"ref": [op, output]}`
for an earlier op's output); identical chains of a stage merge, adding their calls. What the
recording could not tie together (an input of unknown origin, made in another thread or by an
op it could not describe; an op whose work depends on the values) is said (`untied`). Written
into the shapes file's `chains:` section, validated by `shapes.chains`. No torch here."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

# (the nodes and sources are `dataflow`'s, which imports this module: typed as Any here)
Node = Any
Source = Any

# Where a tensor no recorded op made comes from.
PARAMETER, PROGRAM, SETUP = "parameter", "program input", "model building"
THREAD, UNKNOWN, REGION = "another thread", "unknown", "a compiled region's output"
TIED = (PARAMETER, PROGRAM, SETUP, REGION)
UNTIED = {
    THREAD: "made in another thread (record sees only the thread that runs the program)",
    UNKNOWN: "of unknown origin: no recorded op made it, and it is no parameter, buffer or"
    " argument of a top module call (made before the recording, or out of its sight)",
}
# Device ops that are heavy themselves (batched products, convolutions, attention kernels): a
# chain stops at them as at a typed linear, conv or attention.
HEAVY = frozenset(
    {"mm", "bmm", "addmm", "baddbmm", "addbmm", "_scaled_mm", "convolution", "_convolution",
     "cudnn_convolution", "convolution_overrideable", "slow_conv3d_forward", "_slow_conv2d_forward",
     "mkldnn_convolution", "_scaled_dot_product_flash_attention",
     "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
     "_scaled_dot_product_flash_attention_for_cpu", "_flash_attention_forward",
     "_efficient_attention_forward"}
)  # fmt: skip
MAX_CHAINS = 2000  # distinct chains kept; the calls of further ones are counted and said
MAX_ORIGINS = 8  # distinct origins kept per input


@dataclass(eq=False)
class ChainRecord:
    """One distinct chain of a stage: its ops with their arguments linked, its inputs' layouts,
    and what its calls were tied to."""

    stage: str
    ops: list[Any]  # as data, validated when written (`shapes.chains.ChainOp`)
    inputs: list[Any]  # the inputs' tensor specs
    identities: list[str]  # each op's identity (`identity`): the `aten` shape it matches
    calls: int = 0
    sources: list[str] = field(default_factory=list)
    origins: list[list[tuple[Any, ...]]] = field(default_factory=list)  # per input
    marks: list[int] = field(default_factory=list)  # the work ops' clock marks, every call
    after: list[tuple[str, str]] = field(default_factory=list)  # heavy producers
    before: list[tuple[str, str]] = field(default_factory=list)  # heavy consumers
    leaving: set[Leaving] = field(default_factory=set)
    untied: list[str] = field(default_factory=list)


def identity(stage: str, op: str, args: Any, kwargs: Any) -> str:
    """An op call's identity within a stage, as its `aten` shape would have it."""
    return json.dumps([stage, op, args, kwargs or {}], sort_keys=True, default=str)


def add_new(items: list[Any], item: Any) -> None:
    """Append `item` unless it is there (first-seen order, so output is deterministic)."""
    if item is not None and item not in items:
        items.append(item)


class Chains:
    """The distinct chains of a recording, in first-seen order; `beyond`: per stage, the calls
    of chains beyond MAX_CHAINS (counted, and said in the file)."""

    def __init__(self) -> None:
        self.records: dict[str, ChainRecord] = {}
        self.beyond: dict[str, int] = {}

    def segment(self, members: list[Node]) -> None:
        """The nodes of one segment (heavy and host nodes left out) into chains."""
        inside = {id(n) for n in members}
        root = {id(n): id(n) for n in members}

        def find(key: int) -> int:
            while root[key] != key:
                root[key] = root[root[key]]
                key = root[key]
            return key

        for node in members:
            for source in node.sources:
                producer = source.node
                if not isinstance(producer, str) and id(producer) in inside:
                    root[find(id(node))] = find(id(producer))
                elif not isinstance(producer, str) and producer.chain is not None:
                    producer.chain.leaving.add(leaving(producer, source))
        groups: dict[int, list[Node]] = {}
        for node in members:
            groups.setdefault(find(id(node)), []).append(node)
        for group in groups.values():
            if sum(n.work for n in group) >= 2:
                self._chain(group)

    def _chain(self, group: list[Node]) -> None:
        index = {id(n): i for i, n in enumerate(group)}
        inputs: dict[tuple[Any, ...], int] = {}
        specs: list[Any] = []
        origins: list[tuple[Any, ...]] = []
        untied: list[str] = []

        def linked(spec: Any, source: Source) -> Any:
            producer = source.node
            if not isinstance(producer, str) and id(producer) in index:
                ref: Any = {"ref": [index[id(producer)], source.out]}
                if source.rebuilt and producer.outputs[source.out] != spec:
                    ref["as_strided"] = {k: spec[k] for k in ("shape", "strides", "offset")}
                return ref
            who = producer if isinstance(producer, str) else id(producer)
            key = (who, source.out, source.ident, repr(spec))
            if key not in inputs:
                inputs[key] = len(specs)
                specs.append(spec)
                origin = origin_of(source)
                origins.append(origin)
                if origin[0] == "named" and origin[1] not in TIED:
                    add_new(untied, f"input {inputs[key]}: {UNTIED.get(origin[1], origin[1])}")
            return {"input": inputs[key]}

        ops = []
        for node in group:
            feed = iter(node.sources)
            op = {"overload": node.op, "args": relinked(node.args, feed, linked)}
            if node.kwargs:
                op["kwargs"] = relinked(node.kwargs, feed, linked)
            op["outputs"] = node.outputs
            ops.append(op)
            if node.why_not:
                add_new(untied, f"op {len(ops) - 1} ({node.op}): {node.why_not}")
        stage = group[0].stage
        key = repr((stage, ops, specs))  # (the same call describes alike: repr is enough)
        record = self.records.get(key)
        if record is None:
            if len(self.records) >= MAX_CHAINS:
                self.beyond[stage] = self.beyond.get(stage, 0) + 1
                return
            ids = [identity(stage, n.op, n.args, n.kwargs) for n in group]
            record = self.records[key] = ChainRecord(stage, ops, specs, ids, untied=untied)
            record.origins = [[] for _ in specs]
        record.calls += 1
        add_new(record.sources, common_source([n.path for n in group]))
        for number, origin in enumerate(origins):
            if len(record.origins[number]) < MAX_ORIGINS:
                add_new(record.origins[number], origin)
            if origin[0] == "heavy":
                add_new(record.after, origin[1])
        record.marks += [n.mark for n in group if n.work and n.mark >= 0]
        for node in group:
            node.chain, node.index = record, index[id(node)]
        record.leaving.add((len(group) - 1, 0, ()))


def resolved(producer: Node | str) -> Node | str:
    """What stands for a producer now: the heavy call it was folded into, model building."""
    while not isinstance(producer, str) and producer.into is not None:
        producer = producer.into
    return SETUP if not isinstance(producer, str) and producer.setup else producer


def origin_of(source: Source) -> tuple[Any, ...]:
    """An input's origin, named when the document is written: ("named", origin), ("heavy",
    heavy key), ("chain", record, op number) or ("op", stage, overload, args, kwargs)."""
    producer = resolved(source.node)
    if isinstance(producer, str):
        return ("named", producer)
    if producer.heavy is not None:
        return ("heavy", producer.heavy)
    if producer.chain is not None:
        return ("chain", producer.chain, producer.index)
    return ("op", producer.stage, producer.op, producer.args, producer.kwargs)


Leaving = tuple[
    int, int, tuple[Any, ...]
]  # op, output, () or the view read: shape, strides, offset


def leaving(producer: Node, source: Source) -> Leaving:
    """An output that leaves its chain, with the view the reader took of it when that is
    another view of its storage (a slice written in place, the whole buffer read after)."""
    view = source.view
    outputs = producer.chain.ops[producer.index]["outputs"] if producer.chain else []
    made = outputs[source.out] if source.out < len(outputs) else None
    if made is None or view == (tuple(made["shape"]), tuple(made["strides"]), made["offset"]):
        view = ()
    return (producer.index, source.out, view)


def relinked(value: Any, feed: Iterator[Source], linked: Callable[..., Any]) -> Any:
    """A described argument with each tensor replaced by its link (in the recorded order)."""
    if isinstance(value, dict) and set(value) == {"tensor"}:
        return linked(value["tensor"], next(feed))
    if isinstance(value, list):
        return [relinked(v, feed, linked) for v in value]
    if isinstance(value, dict):
        return {k: relinked(v, feed, linked) for k, v in value.items()}
    return value


def common_source(paths: list[str]) -> str:
    """The module path the chain's ops share, numbered blocks as `*`."""
    parts = [p.split(".") if p else [] for p in paths]
    common = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return re.sub(r"\.\d+(?=\.|$)", ".*", ".".join(common)) or "(no module)"


def module_call_keywords() -> list[Any]:
    """The keyword arguments of the module call running the forward pre-hook (torch's
    `_call_impl` holds them; a global pre-hook is handed the positional ones alone)."""
    frame = sys._getframe(2)
    try:
        for _ in range(6):
            if frame is None:
                return []
            found = frame.f_locals.get("kwargs")
            if frame.f_code.co_name in ("inner", "_call_impl") and isinstance(found, dict):
                return list(found.values())
            frame = frame.f_back  # type: ignore[assignment]
        return []
    finally:
        del frame
