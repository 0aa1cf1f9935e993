"""Compiled regions, recorded as they run (issue 40). While recording, `torch.compile` is
wrapped: the program's backend (Inductor with its mode and options, or another) runs as it
would, behind a backend that keeps each graph dynamo hands it (a region's graph: one per
frame, more with graph breaks, again on a recompile). A call of the compiled module or function
runs with the recorder's modes and module hooks set aside, so dynamo compiles and runs exactly
what it would without the recorder (a dispatch mode makes it run the frame eagerly; global
hooks would be traced into the graph); each graph's calls are counted and marked for the
kernel clock (its kernels, named as they launch, and time are its); the code run eagerly
between its graphs is read op by op from torch.profiler (`region_ops`). Each graph is traced
to ATen ops after the program (`region_trace`): a `compiled` shape that capture compiles again."""

from __future__ import annotations

import functools
import json
import re
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from ..shapes.chain_shape import CompiledShape
from . import region_graph, region_trace
from .break_sites import BreakSites
from .chains import REGION
from .region_graph import InputLayout, function_name, layouts, module_of
from .totals import EAGER
from .totals import eager_work as eager_work  # (where the recorder takes it)

THREAD_REGION = "(compiled region {name}, called in another thread)"


@dataclass
class Graph:
    """One graph dynamo compiled: its region, compile id, inputs' layouts, FX graph, entry."""

    stage: str
    region: str
    number: int  # of the region's graphs, in the order dynamo compiled them
    compile_id: str
    inputs: list[InputLayout]
    module: torch.fx.GraphModule
    key: str
    backend: str
    mode: tuple[str | None, Any]  # the program's compile mode and options
    sizes: int = 0  # a dynamic graph: its calls' layouts, in the order they came (0: the first)
    caller: bool = False  # dynamo's graph as run by another caller (stage, region) than its first


@dataclass
class Regions:
    """`torch.compile` wrapped for one recording (see the module docstring)."""

    recorder: Any  # the Recorder (record.recorder, which imports this module)
    new_entry: Callable[..., Any]  # recorder.Entry: (stage, shape, sources=...)
    graphs: list[Graph] = field(default_factory=list)
    eager_calls: dict[tuple[str, str], int] = field(default_factory=dict)  # (stage, region)
    graph_breaks: dict[str, int] = field(default_factory=dict)  # dynamo's reason -> count
    _original: Any = None
    _breaks_before: dict[str, int] = field(default_factory=dict)
    _codes_before: int = 0  # the frames dynamo had seen when the recording began
    broken: dict[tuple[str, str], int] = field(default_factory=dict)  # calls: 2+ graphs, or 0:
    uncompiled: dict[tuple[str, str], int] = field(default_factory=dict)
    _runs: int = 0  # graph calls in the recording thread, so far
    _local: threading.local = field(default_factory=threading.local)  # `_calling`, per thread
    untraced: list[tuple[str, str, str, int, str]] = field(default_factory=list)
    _finished: bool = False
    _quiet: Any = None
    _keepers: list[functools.partial[Any]] = field(default_factory=list)
    sites: BreakSites = field(default_factory=BreakSites)  # where the graph breaks are

    def __enter__(self) -> Regions:
        from torch._dynamo.convert_frame import input_codes

        from .region_graph import dynamo_breaks

        self._breaks_before = dynamo_breaks()
        self._codes_before = len(input_codes.seen)
        self._original, torch.compile = torch.compile, self._compile
        self._quiet = warnings.catch_warnings()  # torch's note on the recorder's global hooks
        self._quiet.__enter__()
        warnings.filterwarnings("ignore", message=".*global hooks on modules.*")
        self.sites.start()
        return self

    def __exit__(self, *exc: object) -> None:
        from .region_graph import dynamo_breaks, unskipped

        if self._original is not None:
            torch.compile = self._original
            self._original = None
            try:
                self._quiet.__exit__(None, None, None)
                unskipped(self._codes_before)
            finally:  # (dynamo's logger as it was, whatever failed above)
                self.sites.stop()
        for said, new in region_graph.new_breaks(dynamo_breaks(), self._breaks_before):
            self.graph_breaks[said] = self.graph_breaks.get(said, 0) + new

    @property
    def _calling(self) -> list[tuple[str, str]]:
        """The (stage, region) calls running in this thread, innermost last."""
        calling: list[tuple[str, str]] | None = getattr(self._local, "calling", None)
        if calling is None:
            calling = self._local.calling = []
        return calling

    @property
    def recompiles(self) -> int:
        """Graphs compiled again for a frame already compiled (new shapes, failed guards)."""
        return sum(
            1 for g in self.graphs if not g.compile_id.endswith("/0") and not (g.sizes or g.caller)
        )  # fmt: skip

    def _compile(self, model: Any = None, **options: Any) -> Any:
        """`torch.compile` as the program calls it (also as a decorator, with or without
        arguments), its region's graphs kept."""
        if model is None:
            return lambda fn: self._compile(fn, **options)
        original = self._original or torch.compile
        settings = options.pop("options", None)
        given = dict(settings) if isinstance(settings, dict) else settings  # torch pops from it
        plain = original(model, **options, options=given)  # torch's checks (compiles nothing)
        if options.get("disable"):
            return plain
        backend, mode = options.pop("backend", "inductor"), options.pop("mode", None)
        settings, guards = region_graph.split_options(settings)
        dynamic = options.get("dynamic")
        inner: Callable[..., Any]
        if backend == "inductor":
            inner = torch._TorchCompileInductorWrapper(mode, settings, dynamic)  # type: ignore[no-untyped-call]
        else:
            inner = torch._TorchCompileWrapper(backend, mode, settings, dynamic)  # type: ignore[no-untyped-call]
        label = backend if isinstance(backend, str) else getattr(backend, "__name__", "custom")
        keeper = next((k for k in self._keepers if k.args[0] == inner), None)
        if keeper is None:  # one per setting: dynamo shares frames only between equal backends
            keeper = functools.partial(self._backend, inner, str(label), (mode, settings))
            self._keepers.append(keeper)
        compiled = original(model, backend=keeper, options=guards, **options)
        if compiled is model:  # dynamo off (TORCHDYNAMO_DISABLE=1): runs eagerly, recorded so
            return compiled
        if isinstance(compiled, torch.nn.Module):
            compiled.forward = self._call(compiled.forward, model)
            return compiled
        call = functools.wraps(model)(self._call(compiled, model))
        call.__dict__.update({**vars(compiled), "_torchdynamo_wrapper_id": id(call)})  # as torch's
        return call

    def _call(self, run: Callable[..., Any], model: Any) -> Callable[..., Any]:
        """A compiled callable run as the program would run it, inside the region's mark."""

        def call(*args: Any, **kwargs: Any) -> Any:
            module = module_of(model)
            rec = self.recorder
            if rec._thread is not None and threading.current_thread() is not rec._thread:
                return self._elsewhere(run, model, args, kwargs)
            with region_graph.suspended_modes(self.recorder) as suspended:
                if not suspended:  # another mode above the recorder's: left as it is
                    return run(*args, **kwargs)
                stack = rec._stack  # torch.compile(module): its wrapper is running, named
                if module is not None and stack and getattr(stack[-1], "_orig_mod", 0) is module:
                    module = None
                if module is not None:
                    rec._enter(module, args)
                rec.learn_device([*args, *kwargs.values()])  # (its calls: no eager op sees them)
                stage, path = rec.where()
                region = path if module_of(model) is not None else function_name(model, path)
                self._calling.append((stage, region))
                runs, mark, warm = self._runs, rec.clock.begin(), rec.warming  # (not counted)
                try:
                    result = run(*args, **kwargs)
                    if rec.flow is not None:  # what a region returns: a chain's tied input
                        rec.flow.made(result, REGION)
                    return result
                finally:
                    rec.clock.end(mark, ("region", stage, EAGER.format(name=region)))
                    where, ran = (stage, region), self._runs - runs  # graphs: 0 (eager), 2+
                    self.eager_calls[where] = self.eager_calls.get(where, 0) + (not warm)
                    for count, bad in ((self.uncompiled, ran == 0), (self.broken, ran > 1)):
                        count[where] = count.get(where, 0) + (bad and not warm)
                    self._calling.pop()
                    if module is not None:
                        rec._leave(module, args, None)

        return call

    def _elsewhere(self, run: Callable[..., Any], model: Any, args: Any, kwargs: Any) -> Any:
        """A region called in another thread: run as there without record (its counting mode set
        aside: dynamo would run the frame eagerly, for good), counted as a call not seen."""
        from torch.utils import _python_dispatch as dispatch

        from .threads import _Counting

        if not isinstance(dispatch._get_current_dispatch_mode(), _Counting):
            return run(*args, **kwargs)
        stage, path = self.recorder.where()
        region = path if module_of(model) is not None else function_name(model, path)
        threads = self.recorder.threads
        with threads._lock:
            key = (stage, THREAD_REGION.format(name=region))
            threads.calls[key] = threads.calls.get(key, 0) + 1
        self._calling.append((stage, region))
        try:
            with dispatch._pop_mode_temporarily():
                return run(*args, **kwargs)
        finally:
            self._calling.pop()

    def _backend(
        self, inner: Callable[..., Any], label: str, mode: tuple[str | None, Any],
        graph: torch.fx.GraphModule, example_inputs: list[Any],
    ) -> Callable[..., Any]:  # fmt: skip
        """The program's backend on one graph; the graph kept, its calls counted and marked."""
        from torch._guards import CompileContext

        from .region_graph import symbolic

        if self._original is None:  # compiled after the recording: the program's, untouched
            return inner(graph, example_inputs)  # type: ignore[no-any-return]
        clock = self.recorder.clock
        mark = clock.begin()  # what compiling launches (max-autotune's benchmarks): building
        try:
            compiled = inner(graph, example_inputs)
        finally:
            clock.end(mark, ("setup",))
        stage, region = self._calling[-1] if self._calling else (self.recorder.where()[0], "")
        compile_id = str(CompileContext.current_compile_id() or f"{len(self.graphs)}/0")
        number = len({g.number for g in self.graphs if (g.stage, g.region) == (stage, region)})
        key = json.dumps([stage, {"op": "compiled", "region": region, "graph": number}])
        inputs = layouts(example_inputs)
        kept = Graph(stage, region, number, compile_id, inputs, graph, key, label, mode)
        self.graphs.append(kept)
        self._entry(key, stage, region)
        # a dynamic graph (symbolic sizes): each layout of its calls is a shape of its own; the
        # graph run by another caller (a function compiled once, called from two stages): too
        dynamic = any(symbolic(v) for v in example_inputs)
        callers = {(stage, region): (kept, {tuple(inputs): kept} if dynamic else None)}

        def run(*args: Any) -> Any:
            if threading.current_thread() is not self.recorder._thread or self.recorder.warming:
                return compiled(*args)  # another thread's call (counted there) or the warm-up
            self._runs += 1
            where = self._calling[-1] if self._calling else (stage, region)
            if where not in callers:
                callers[where] = self._caller(kept, where, args, dynamic)
            target, sizes = callers[where]
            target = target if sizes is None else self._sized(target, sizes, args)
            entry = self.recorder.recording.entries[target.key]
            first = entry.calls == 0  # Inductor tunes its kernels in their first launch
            entry.calls += 1
            mark = clock.begin()
            try:
                return compiled(*args)
            finally:
                clock.end(mark, ("first" if first else "shape", target.key))

        return run

    def _caller(
        self, graph: Graph, where: tuple[str, str], args: Any, dynamic: bool
    ) -> tuple[Graph, dict[tuple[InputLayout, ...], Graph] | None]:
        """The graph as run by another caller than the one it was compiled for: a shape of that
        caller's stage and region (its calls and time are theirs), numbered in that region."""
        stage, region = where
        number = len({g.number for g in self.graphs if (g.stage, g.region) == where})
        key = json.dumps([stage, {"op": "compiled", "region": region, "graph": number}])
        inputs = layouts(args) if dynamic else graph.inputs
        copy = replace(
            graph, stage=stage, region=region, number=number, inputs=inputs, key=key, caller=True
        )  # fmt: skip
        self.graphs.append(copy)
        self._entry(key, stage, region)
        return copy, ({tuple(inputs): copy} if dynamic else None)

    def _sized(self, graph: Graph, sizes: dict[tuple[InputLayout, ...], Graph], args: Any) -> Graph:
        """The graph at the layouts of one call of it (a dynamic graph: a new one, a new shape)."""
        found = tuple(layouts(args))
        if found not in sizes:
            key = json.loads(graph.key)
            key[1]["sizes"] = len(sizes)
            key = json.dumps(key)
            sized = replace(graph, inputs=list(found), key=key, sizes=len(sizes))
            sizes[found] = sized
            self.graphs.append(sized)
            self._entry(sized.key, graph.stage, graph.region)
        return sizes[found]

    def _entry(self, key: str, stage: str, region: str) -> None:
        """The recording entry that counts a graph's calls (its shape is made by `finish`)."""
        shape = {"op": "compiled", "region": region}
        self.recorder.recording.entries[key] = self.new_entry(stage, shape, sources=[region or "-"])

    def settle(self, measured: dict[tuple[str, ...], Any] | None) -> None:
        """A graph's first call, timed, is compile-time work (Inductor tunes its kernels as they
        first launch): model building (`setup`); a graph called once keeps it."""
        times = measured if measured is not None else {}
        calls_of = {key: calls for _, _, key, calls, _ in self.untraced}
        calls_of |= {k: e.calls for k, e in self.recorder.recording.entries.items()}
        for graph in self.graphs:
            first = times.pop(("first", graph.key), None)
            calls, steady = calls_of.get(graph.key, 1), times.get(("shape", graph.key))
            if first is None:
                continue
            if calls < 2 or steady is None:
                times[("shape", graph.key)] = first
                continue
            times.setdefault(("setup",), type(first)()).merge(first)
            times[("shape", graph.key)] = steady.scaled(calls / (calls - 1))

    def notes(self) -> Any:
        """What the shapes file says of the compiled regions: graph breaks, recompiles."""
        if not self.graphs and not self.graph_breaks:
            return None
        return region_graph.notes(self.graphs, self.recompiles, self.graph_breaks, self.sites.sites)

    def finish(self) -> None:
        """Each graph traced to ATen ops, into its entry's shape (or why it cannot be one)."""
        if self._finished:
            return
        self._finished = True
        entries = self.recorder.recording.entries
        for graph in [g for g in self.graphs if entries[g.key].calls == 0]:
            del entries[graph.key]  # compiled in another thread, never run in the recorded one
            self.graphs.remove(graph)
        for graph in self.graphs:
            entry = entries[graph.key]
            calls = max(entry.calls, 1)
            name = re.sub(r"[^A-Za-z0-9_.:+-]", "_", f"{entry.stage}:compiled:{graph.region}")
            name = f"{name}:g{graph.number}" + (f":s{graph.sizes}" if graph.sizes else "")
            try:
                chain = region_trace.traced_chain(graph.module, graph.inputs, name, calls)
            except Exception as exc:  # uncovered work, saying why: no shape capture can replay
                why = " ".join(f"not traced to ATen ops: {type(exc).__name__}: {exc}".split())
                label = f"(compiled region {graph.region}, graph {graph.number})"
                self.untraced.append((entry.stage, label, graph.key, calls, why[:300]))
                del entries[graph.key]
                continue
            region = CompiledShape(
                op="compiled", region=graph.region, graph=graph.number, backend=graph.backend,
                compile_id=graph.compile_id, mode=graph.mode[0], chain=chain, calls=calls,
                options=region_graph.plain_options(graph.mode[1]),
                sizes=graph.sizes or None,
                compile="default" if graph.backend == "inductor" else None,
            )  # fmt: skip
            entry.shape = region.model_dump(
                mode="json", exclude_unset=True, exclude_none=True, exclude={"calls"}
            )
