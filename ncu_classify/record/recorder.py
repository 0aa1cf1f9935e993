"""The recorder: a torch function mode that hands each call to `calls`, a dispatch mode for
every other device op (`device_ops`), global module hooks for the stack of modules running
(each call's path and stage), compiled regions and CUDA graphs; building the model left out.
On a GPU the kernel clock (`timing`) marks every call: the program's kernel time per shape."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .._version import __version__
from ..shapes.recorded import Recorded, RecordedTotals
from .calls import CallKwargs, in_module_setup, sets_up_parameter, shape_of
from .cudagraphs import CudaGraphs
from .dataflow import Dataflow
from .device_ops import DeviceOps
from .function_mode import CallMode
from .naming import top_name
from .region_ops import region_ops
from .regions import Regions
from .shapes_document import CallShape, DescribedCalls
from .threads import WHY, OtherThreads
from .timing import KernelClock
from .totals import copy_time, document_ops, loose_work, measured, per_call, uncovered_item
from .warmup import StartAt


@dataclass
class Entry:
    """One distinct shape of one stage: the shapes-file mapping and how often it ran."""

    stage: str
    shape: CallShape
    calls: int = 0
    sources: list[str] = field(default_factory=list)
    inputs_file: str | None = None


@dataclass
class Recording:
    """What a recording holds: distinct shapes in first-seen order, and what it could not keep."""

    entries: dict[str, Entry] = field(default_factory=dict)
    # calls whose typed shape could not be made (kept as their device ops): name -> calls
    not_typed: dict[str, int] = field(default_factory=dict)
    device: str = "cpu"


class Recorder:
    """`with Recorder(stages=[("transformer.*", "dit")]) as rec: model(...)`. `roots` names top
    modules (`{"vae": vae}`), else a top module is named after what holds it in the caller.
    Calls in other threads are not seen (torch modes are per thread): their device ops are
    counted (`threads`) as uncovered work. `chains=False`: no dataflow. `used`: the stage
    patterns that named a call's stage (by index)."""

    def __init__(
        self,
        stages: Sequence[tuple[str, str]] = (),
        roots: dict[str, torch.nn.Module] | None = None,
        inputs_dir: Path | None = None,
        inputs_budget_bytes: int = 0,
        measure: bool = True,
        chains: bool = True,
        start_at: StartAt | None = None,
    ) -> None:
        self.stage_patterns = list(stages)
        # weak keys: a module that is freed cannot lend its name to one born at its address
        self.names: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary(
            {m: n for n, m in (roots or {}).items()}
        )
        self.inputs_dir = inputs_dir.resolve() if inputs_dir is not None else None
        self.budget = inputs_budget_bytes
        self.recording = Recording()
        self._local = threading.local()  # each thread's stack of running modules
        self._relative: dict[tuple[int, int], str | None] = {}
        self._handles: list[Any] = []
        self._mode = CallMode(self)
        self.clock = KernelClock(measure and torch.cuda.is_available())
        self.device_ops = DeviceOps(self.where, self.clock)
        self.threads = OtherThreads(self.where)
        self.threads.warming = lambda: self.warming
        self.flow = Dataflow(self.where, lambda: self._stack) if chains else None
        self.device_ops.flow = self.threads.flow = self.flow
        self.used: set[int] = set()
        self._thread: threading.Thread | None = None  # the one that entered: modes are its
        self.regions = Regions(self, Entry)  # torch.compile'd modules and functions, as run
        self.cuda_graphs = CudaGraphs(self)  # CUDA graphs: captured calls, replays
        self.start_at = start_at  # `--start-at`: the warm-up before it runs unrecorded

    def __enter__(self) -> Recorder:
        self._thread = threading.current_thread()
        self.device_ops.stopped = False
        self.clock.__enter__()
        if self.start_at is not None and not self.start_at.started:  # the warm-up: as if stopped
            self.device_ops.stopped = True
            self.start_at.begin(self.clock)
        self.threads.__enter__()
        hooks = torch.nn.modules.module
        self._handles = [
            hooks.register_module_forward_pre_hook(self._enter),
            hooks.register_module_forward_hook(self._leave, always_call=True),
        ]
        self._mode.__enter__()
        self.device_ops.__enter__()
        self.regions.__enter__()
        self.cuda_graphs.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop recording, once, from any thread (the program's `os._exit`); from another
        thread the modes stay with the recording thread, but nothing more is counted."""
        self.regions.__exit__()
        self.cuda_graphs.__exit__()
        if self._thread is threading.current_thread():
            self.device_ops.__exit__(None, None, None)
            self._mode.__exit__(None, None, None)
        self._thread = None
        self.device_ops.stopped = True
        self.threads.__exit__()
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self.start_at is not None:
            self.start_at.end()
        self.clock.__exit__()
        self.regions.finish()
        self.cuda_graphs.finish()
        if self.flow is not None:
            self.flow.finish()

    # --- where a call comes from ---------------------------------------------------------------

    @property
    def warming(self) -> bool:
        """Whether the program's warm-up (`--start-at`) runs: nothing is recorded."""
        return self.start_at is not None and not self.start_at.started

    @property
    def _stack(self) -> list[torch.nn.Module]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _enter(self, module: torch.nn.Module, args: Any) -> None:
        if module not in self.names:  # name it and, once for all, everything below it
            name = self._name(module)
            for below, child in module.named_modules():
                self.names.setdefault(child, f"{name}.{below}" if below else name)
        self._stack.append(module)
        if self.warming and threading.current_thread() is self._thread:
            assert self.start_at is not None
            self.device_ops.stopped = not self.start_at.entered(self.path())
        if self.flow is not None and len(self._stack) == 1 and not self.warming:
            self.flow.program_inputs(args)

    def _leave(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        stack = self._stack
        while stack:  # (always called, also when the forward raised)
            if stack.pop() is module:
                break

    def _name(self, module: torch.nn.Module) -> str:
        """Dotted path of a module not yet named: below a running module, else the name the
        calling code holds it by, else its class."""
        for parent in reversed(self._stack):
            below = self._below(parent, module)
            if below is not None:
                return f"{self.names.get(parent, 'model')}.{below}"
        return top_name(module, set(self.names.values()))

    def _below(self, parent: torch.nn.Module, module: torch.nn.Module) -> str | None:
        """`module`'s path inside `parent` (cached), or None."""
        if (key := (id(parent), id(module))) not in self._relative:
            found = next((n for n, m in parent.named_modules() if m is module and n), None)
            self._relative[key] = found
        return self._relative[key]

    def path(self) -> str:
        """Module path of the innermost module running now ('' outside any module), along the
        modules running: a submodule shared by two parents is named under the one calling."""
        stack = self._stack
        if not stack:
            return ""
        path, previous = self.names.get(stack[0], ""), stack[0]
        for module in stack[1:]:
            below = self._below(previous, module)
            path = f"{path}.{below}" if below is not None else self.names.get(module, path)
            previous = module
        return path

    def where(self) -> tuple[str, str]:
        """(stage, module path) of the code running now."""
        path = self.path()
        return self.stage_of(path), path

    def stage_of(self, path: str) -> str:
        """The first `--stage PATTERN=STAGE` the path matches, else its top module's name."""
        for number, (pattern, stage) in enumerate(self.stage_patterns):
            if fnmatch.fnmatchcase(path, pattern):
                self.used.add(number)
                return stage
        top = path.split(".", 1)[0] if path else "main"
        return re.sub(r"[^A-Za-z0-9_]", "_", top) or "main"

    def observe(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: CallKwargs, result: Any
    ) -> tuple[str, tuple[str, ...]]:
        """Record one call and say what its kernels are: a replayable shape ("typed"), or
        another call ("other": its device ops are kept as `aten` shapes). Building the model is
        not inference ("setup"): casts and initialisers of a parameter outside any forward and
        calls inside `Module._apply`; inside a forward they are (an fp32 norm casts its bf16
        weight on every call); a factory without tensor inputs is no shape (its ops are kept)."""
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        building = tensors and not self._stack and sets_up_parameter(func, tensors[0])
        if in_module_setup() or building:
            return "setup", ("setup",)
        self.learn_device([*tensors, result])
        shape, inputs = shape_of(func, args, kwargs, result) if tensors else (None, [])
        if shape is not None:
            return "typed", ("shape", self._add(shape, inputs))
        return "other", ("loose", self.where()[0])

    def learn_device(self, values: Iterable[Any]) -> None:
        """The program's device from the first tensor off the CPU seen (an op's input or result,
        a compiled region's argument): a program whose only eager ops are factories (its models
        compiled, `torch.randn(device="cuda")`) runs on the GPU, and is timed there. A tensor
        on `meta` (a placeholder: no memory, no kernels) says nothing."""
        if self.recording.device == "cpu":
            found = (v.device.type for v in values if isinstance(v, torch.Tensor))
            self.recording.device = next((d for d in found if d not in ("cpu", "meta")), "cpu")

    def heavy(self, verdict: str, target: tuple[str, ...]) -> str | None:
        """The key of a typed heavy call (linear, conv, attention: not a cast), else None."""
        typed = verdict == "typed" and self.recording.entries[target[1]].shape["op"] != "cast"
        return target[1] if typed else None

    def _add(self, shape: CallShape, inputs: list[torch.Tensor]) -> str:
        stage, path = self.where()
        key = json.dumps([stage, shape], sort_keys=True)
        entry = self.recording.entries.get(key)
        if entry is None:
            entry = Entry(stage, shape, inputs_file=self._save(key, inputs))
            self.recording.entries[key] = entry
        entry.calls += 1
        source = re.sub(r"\.\d+(?=\.|$)", ".*", path) or "(no module)"
        if source not in entry.sources:
            entry.sources.append(source)
        return key

    def _save(self, key: str, inputs: list[torch.Tensor]) -> str | None:
        """Keep the inputs of a new shape when the budget allows; the file name is their key's
        hash, so a second recording of the same model writes the same names."""
        if self.inputs_dir is None or not inputs:
            return None
        if (size := sum(t.numel() * t.element_size() for t in inputs)) > self.budget:
            return None
        name = hashlib.sha256(key.encode()).hexdigest()[:16] + ".pt"
        target = self.inputs_dir / name
        partial = target.with_name(f".{name}.partial")
        torch.save([t.detach().to("cpu").contiguous() for t in inputs], partial)
        partial.replace(target)  # a reader sees the whole file or none
        self.budget -= size
        return name

    # --- the shapes file ---------------------------------------------------------------------

    def described_calls(self, command: str, inputs_prefix: str = "") -> DescribedCalls:
        """The recording as the calls it saw (validated by `validated_document`): typed
        shapes, then each stage's device ops as `aten` shapes, each with its real kernel time
        per call when the program ran on a GPU; the work no shape covers under `totals`."""
        times = measured(self.clock) if self.recording.device != "cpu" else None
        self.regions.settle(times)  # a compiled graph's first call: compile-time work
        self.cuda_graphs.attribute(times)  # a replayed graph's time, spread over its calls
        eager = region_ops(self.clock, times)  # a region's eager code, op by op (profiled)
        stages: dict[str, list[CallShape]] = {}
        for key, entry in self.recording.entries.items():
            shape = {**entry.shape, "calls": entry.calls, "source": ", ".join(entry.sources)}
            shape["real_calls"] = entry.calls
            if entry.inputs_file:
                shape["inputs_file"] = inputs_prefix + entry.inputs_file
            time = times.get(("shape", key)) if times is not None else None
            shape.update(per_call(time, entry.calls, times is not None))
            if shape["op"] == "compiled" and time is not None:  # the program's kernels, named
                shape["kernels"] = [
                    n[:160] for n in sorted(time.names, key=lambda n: (-time.names[n], n))[:40]
                ]
            stages.setdefault(entry.stage, []).append(shape)
        op_stages, uncovered = document_ops(self.device_ops, times)
        for stage, shapes in [*op_stages.items(), *eager.shapes().items()]:
            stages.setdefault(stage, []).extend(shapes)
        uncovered += loose_work(self.device_ops.failed, times) + eager.work(self.regions, times)
        uncovered += self.cuda_graphs.uncovered(times)  # graphs not attributed
        for (stage, name), calls in self.threads.calls.items():
            uncovered.append(uncovered_item(stage, name, WHY, calls, None, times))
        setup = times.get(("setup",)) if times is not None else None
        stage_of: dict[tuple[str, ...], str] = {
            ("shape", k): e.stage for k, e in self.recording.entries.items()
        }
        stage_of.update({("op", k): op.stage for k, op in self.device_ops.ops.items()})
        totals = RecordedTotals(
            basis="kernel_time" if times is not None else "calls",
            stages={},  # summed by validated_document, from what the file holds
            uncovered=uncovered,
            setup_kernel_us=round(setup.ns / 1000, 3) if setup is not None else None,
        )
        recorded = Recorded(
            command=command, tool_version=__version__, torch=torch.__version__,
            device=self.recording.device, totals=totals, compiled=self.regions.notes(),
        )  # fmt: skip
        copies = copy_time(times, stage_of) if times is not None else None
        return DescribedCalls(recorded=recorded, stages=stages, copies=copies)


@contextmanager
def recording(
    stages: Sequence[tuple[str, str]] = (), roots: dict[str, torch.nn.Module] | None = None
) -> Iterator[Recorder]:
    """`with recording(stages=[("vae.*", "vae")]) as rec:` around the user's own code."""
    recorder = Recorder(stages, roots)
    with recorder:
        yield recorder
