"""The dataflow of a recording: which recorded call made each tensor that a call takes, so that
the chains of device ops between two heavy ops (a GEMM, a conv, attention) can be rebuilt and
replayed as one function (`chains` writes them into the shapes file).

Every op the dispatch mode sees on the recording thread becomes a node, views included (a
chain replays them, so that its tensors have the recorded layouts): its arguments as data, and
for each tensor argument its source, looked up before the op runs. A source is found by the
tensor object (a weak reference, valid while its version counter is unchanged), else by its
storage (the op that last wrote it, kept by a weak reference to the storage: a freed storage
whose memory came back is not mistaken for the old one; the tensor is then rebuilt from that
op's output by `as_strided`), else it is a parameter or buffer, a top module's argument, made
while building the model or in another thread, or of unknown origin. A heavy call (linear,
conv, attention, matmul) is one node; those between two (or a stage change) are a segment."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.multiprocessing.reductions import StorageWeakRef

from .calls import CallKwargs
from .chains import (
    HEAVY,
    PARAMETER,
    PROGRAM,
    THREAD,
    UNKNOWN,
    ChainRecord,
    Chains,
    add_new,
    identity,
    leaving,
    module_call_keywords,
)
from .device_ops import Seen, described, op_name, tensors_in, why_not_replayed
from .identity import TensorNumbers, expired, storage_key, weak_storage

# Torch calls that are heavy (a GEMM, a conv, attention) whatever the recorder types them as:
# their device ops are not described one by one, only what they read and make (`open`).
HEAVY_CALLS = frozenset(
    {F.linear, F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d,
     F.conv_transpose3d, F.scaled_dot_product_attention, torch.matmul, torch.mm, torch.bmm,
     torch.addmm, torch.baddbmm, torch.Tensor.matmul, torch.Tensor.mm, torch.Tensor.bmm,
     torch.Tensor.__matmul__, torch.Tensor.__rmatmul__, torch.Tensor.addmm,
     torch.Tensor.baddbmm}
)  # fmt: skip
FORGET_AFTER = 1000  # entries of tensors gone kept at most (twice the live ones, plus this)
MAX_SEGMENT = 512  # ops between two heavy ops: a longer run is cut (the file stays readable)


@dataclass(eq=False, slots=True)
class Node:
    """One op the recording thread ran (or a heavy call folded into one), in program order."""

    stage: str
    path: str
    op: str
    args: list[Any]
    kwargs: CallKwargs
    sources: list[Source]  # one per tensor argument, in order (positional, then keyword)
    outputs: list[Any]  # tensor specs
    mark: int = -1
    work: bool = False  # may launch a kernel (not a view, not empty)
    host: bool = False  # every tensor on the CPU
    heavy: tuple[str, str] | None = None  # ("shape", entry key) or ("op", aten identity)
    why_not: str | None = None  # a replay would not do the program's work
    chain: ChainRecord | None = None
    index: int = -1  # its op number in its chain
    into: Node | None = None  # the heavy call it was folded into
    setup: bool = False  # it built the model: what it made is model state


@dataclass(frozen=True, slots=True)
class Source:
    """Where a tensor argument comes from: a node's output `out`, or an origin by name."""

    node: Node | str
    out: int = 0
    rebuilt: bool = False  # found by storage: `view` is rebuilt from the output by as_strided
    ident: int = 0  # the tensor's number, for an origin by name (one input per tensor)
    view: tuple[Any, ...] = ()  # when rebuilt: the view read (shape, strides, offset)


class Dataflow:
    """The dataflow tracker the dispatch mode feeds (see the module docstring). `where` gives
    (stage, module path), `modules` the modules running (their buffers are model state)."""

    def __init__(
        self, where: Callable[[], tuple[str, str]], modules: Callable[[], list[Any]]
    ) -> None:
        self.where, self.modules = where, modules
        self.objects: dict[int, tuple[Any, int, Node | str, int]] = {}
        self.storages: dict[tuple[torch.device, int], tuple[StorageWeakRef, Node | str, int]] = {}
        self.numbers = TensorNumbers()  # one input per tensor object of an origin by name
        self.on_device = False  # a tensor off the CPU was seen: host ops are no device work
        self.stream: list[Node] = []
        self.frames: list[int] = []
        self.checked = 0  # nodes of the stream already settled
        self.here: tuple[str, str] | None = None  # (stage, path) of the torch call running
        self.stopped: tuple[str, str] | None = None  # (stage, why) it stopped following
        self.light: tuple[int, Node, str] | None = None  # the heavy call running: depth, node
        self.chains = Chains()
        self.kept = FORGET_AFTER  # entries beyond which those of tensors gone are dropped

    # --- sources -----------------------------------------------------------------------------

    def sources(self, args: tuple[Any, ...], kwargs: CallKwargs) -> list[Source]:
        """The source of every tensor argument, before the op runs (an in-place op's own)."""
        return [self._source(t) for t in _inputs(args, kwargs)]

    def _source(self, tensor: torch.Tensor) -> Source:
        if type(tensor) is torch.nn.Parameter:  # (also when model building made its data)
            return Source(PARAMETER, ident=self._ident(tensor))
        known = self.objects.get(id(tensor))
        if known is not None and known[0]() is tensor and known[1] == tensor._version:
            by_name = isinstance(known[2], str)  # (one input per tensor of an origin by name)
            return Source(known[2], known[3], ident=self._ident(tensor) if by_name else 0)
        key = storage_key(tensor)
        written = self.storages.get(key) if key is not None else None
        if written is not None and not expired(written[0]):
            by_name = isinstance(written[1], str)
            view = (tuple(tensor.shape), tuple(tensor.stride()), tensor.storage_offset())
            ident = self._ident(tensor) if by_name else 0
            return Source(written[1], written[2], True, ident, view)
        origin = self._origin(tensor)
        if origin == PARAMETER:  # (known by its object from now on: looked up once)
            self.objects[id(tensor)] = (weakref.ref(tensor), tensor._version, origin, 0)
        return Source(origin, ident=self._ident(tensor))

    def _ident(self, tensor: torch.Tensor) -> int:
        """The tensor object's number (record/numbering.py), not its id."""
        number = self.numbers.of(tensor)
        if len(self.objects) + len(self.storages) + len(self.numbers) > self.kept:
            self._forget()
        return number

    def _origin(self, tensor: torch.Tensor) -> str:
        if isinstance(tensor, torch.nn.Parameter):
            return PARAMETER
        for module in self.modules():
            if any(b is tensor for b in module._buffers.values()):
                return PARAMETER
        return UNKNOWN

    def made(self, result: Any, producer: Node | str) -> None:
        """Say that `producer` made (or wrote) the tensors of `result`."""
        for out, tensor in enumerate(tensors_in(result)):
            self._made(tensor, producer, out, view=False)

    def _made(self, tensor: torch.Tensor, producer: Node | str, out: int, view: bool) -> None:
        """`producer` made the tensor (a view: the object alone; else also its storage)."""
        self.objects[id(tensor)] = (weakref.ref(tensor), tensor._version, producer, out)
        if not view:
            try:
                storage = tensor.untyped_storage()
            except (RuntimeError, NotImplementedError):
                return
            if storage.data_ptr():
                key = (tensor.device, storage.data_ptr())
                self.storages[key] = (weak_storage(storage), producer, out)
        if len(self.objects) + len(self.storages) + len(self.numbers) > self.kept:
            self._forget()

    def _forget(self) -> None:
        """Drop the entries of tensors that are gone (a long program keeps making new ones)."""
        for key, entry in list(self.objects.items()):
            if entry[0]() is None:
                self.objects.pop(key, None)
        for skey, written in list(self.storages.items()):
            if expired(written[0]):
                self.storages.pop(skey, None)
        self.numbers.forget_gone()
        held = len(self.objects) + len(self.storages) + len(self.numbers)
        self.kept = 2 * held + FORGET_AFTER  # (amortized)

    def program_inputs(self, args: Any) -> None:
        """The tensors a top module is called with (`args`, and the keyword arguments its
        module call holds): the program's inputs, unless made here."""
        for tensor in tensors_in([list(args), module_call_keywords()]):
            if self._source(tensor).node == UNKNOWN:
                self.made(tensor, PROGRAM)

    # --- nodes -------------------------------------------------------------------------------

    def op(self, func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any,
           sources: list[Source], mark: int, seen: Seen | None) -> None:  # fmt: skip
        """One op the dispatch mode ran: `seen`, the device ops' description of it, when it
        did work; a view (or an op on empty tensors) otherwise."""
        made = tensors_in(result)
        if not made and not sources:
            return  # (no tensor in or out: a library's probe, no device work)
        if self.light is not None:  # inside a heavy call: what it makes, no more
            heavy = self.light[1]
            for out, tensor in enumerate(made):
                self._made(tensor, heavy, out, view=seen is None)
            return
        here = self.here if self.frames else None
        if here is None:  # (one torch call runs in one module: its ops share where they are)
            here = self.here = self.where()
        if seen is not None:
            node = Node(*here, seen.op, seen.args, seen.kwargs, sources, seen.outputs)
            node.host, node.mark, node.work = seen.on_host, mark, True
            self.on_device = self.on_device or not seen.on_host
            node.why_not = why_not_replayed(seen.op, seen.args)
        else:
            mixed = (
                len({t.device.type for t in made} | {t.device.type for t in _inputs(args, kwargs)})
                > 1
            )
            node = Node(
                *here,
                op_name(func),
                described(list(args), mixed),
                {k: described(v, mixed) for k, v in kwargs.items()},
                sources,
                [described(t)["tensor"] for t in made],
            )
        if node.op.split(".")[1] in HEAVY:
            node.heavy = ("op", identity(node.stage, node.op, node.args, node.kwargs))
        for out, tensor in enumerate(made):
            self._made(tensor, node, out, view=not node.work)
        self._append(node)

    def failed(self, result: Any, name: str) -> None:
        """An op the recorder could not describe: what it made is of no recorded origin."""
        self.made(result, f"made by an op the recorder could not describe ({name})")

    def foreign(self, result: Any) -> None:
        """Tensors another thread made."""
        self.made(result, THREAD)

    def open(self, func: Any = None, args: tuple[Any, ...] = (), kwargs: Any = None) -> None:
        """A torch call starts: what it dispatches may fold into it when it ends; a heavy
        call's ops fold into it from the start (`light`): it reads its arguments."""
        if self.light is None and func in HEAVY_CALLS:
            name = getattr(func, "__name__", "heavy call")
            node = Node("", "", "", [], {}, self.sources(args, kwargs or {}), [])
            self.light = (len(self.frames) + 1, node, name)
        self.frames.append(len(self.stream))
        self.here = None

    def close(self, heavy: str | None, setup: bool) -> None:
        """A torch call ended: a typed heavy call folds its ops into one heavy node, model
        building makes its tensors model state; at the outermost call, segments settle."""
        if self.light is not None and self.light[0] == len(self.frames):
            _, node, name = self.light
            self.light = None
            node.stage, node.path = self.where()
            node.setup, node.sources = setup, [] if setup else node.sources
            node.heavy = ("shape", heavy) if heavy is not None else ("call", name)
            self.frames.pop()
            if not setup:
                self._append(node)
            if not self.frames:
                self._settle()
            return
        start = self.frames.pop()
        inner = self.stream[start:]
        if heavy is not None or setup:
            del self.stream[start:]
            into = None
            if heavy is not None:
                stage, path = self.where()
                outside = [s for n in inner for s in n.sources if not _within(s, inner)]
                into = Node(stage, path, "", [], {}, outside, [], heavy=("shape", heavy))
                self._append(into)
            for node in inner:
                node.into, node.setup, node.sources = into, into is None, []
        if not self.frames:
            self._settle()

    def _append(self, node: Node) -> None:
        self.stream.append(node)
        if not self.frames:
            self._settle()

    def _settle(self) -> None:
        """Close every segment that a heavy node, a change of stage or its length ended."""
        number = self.checked
        while number < len(self.stream):
            node = self.stream[number]
            if node.heavy is not None or node.stage != self.stream[0].stage:
                self._segment(self.stream[:number])
                if node.heavy is not None:
                    self._heavy(node)
                    node.sources = []
                    number += 1
                del self.stream[:number]
                number = 0
            elif number >= MAX_SEGMENT:
                self._segment(self.stream[:number])
                del self.stream[:number]
                number = 0
            else:
                number += 1
        self.checked = len(self.stream)

    def stop(self, why: str) -> None:
        """It could not follow the program (a failure of its own): it stops, as said."""
        self.stopped = (self.where()[0], why)

    def finish(self) -> None:
        """The recording ended: the last segment closes."""
        if self.stopped is None:
            self._segment(self.stream)
        self.stream, self.checked = [], 0

    def _heavy(self, node: Node) -> None:
        """A heavy node consumes what it reads: its producers' chains end before it."""
        for source in node.sources:
            producer = source.node
            if isinstance(producer, Node) and producer.chain is not None:
                producer.chain.leaving.add(leaving(producer, source))
                add_new(producer.chain.before, node.heavy)

    def _segment(self, nodes: list[Node]) -> None:
        """A segment's nodes into chains; host ops are no device work in a GPU program."""
        on_device = self.on_device
        self.chains.segment([n for n in nodes if not (n.host and on_device) and n.heavy is None])
        for node in nodes:  # (done with: a live tensor's node must not hold the history)
            node.sources = []
            if node.chain is not None:  # (named by its chain from now on)
                node.args, node.kwargs, node.outputs = [], {}, []


def _inputs(args: tuple[Any, ...], kwargs: CallKwargs) -> list[torch.Tensor]:
    """The tensor arguments, in order (`tensors_in`, quicker for the flat common case)."""
    found: list[torch.Tensor] = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += tensors_in(value)
    return found


def _within(source: Source, nodes: list[Node]) -> bool:
    return any(source.node is n for n in nodes)
