"""Record the op shapes a real PyTorch model runs, as a shapes file (`ncu-classify record`).

A `TorchFunctionMode` sees every torch function the user's code calls, at the level the shapes
file speaks (F.linear, F.conv3d, F.scaled_dot_product_attention, matmul, casts), before any
device-specific decomposition, so a CPU run records what a GPU run would replay. Global module
hooks keep the stack of modules being run, so each call knows its module path
(`transformer.blocks.3.attn1.to_q`) and from it its stage. Identical shapes merge, counting
calls; calls of ops the replay cannot run are counted by name, never dropped silently. With
`inputs_dir`, the first inputs of each distinct shape are saved (within a byte budget) so that
capture can replay the real tensors.

This module and `replay` are the only ones that import torch.
"""

from __future__ import annotations

import fnmatch
import hashlib
import inspect
import json
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from . import __version__

DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
CAST_TARGETS = {**DTYPE_NAMES, torch.uint8: "uint8"}
CAST_METHODS = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16}
# Functions that never launch a kernel of their own even when they return a new tensor object.
FREE = {
    "size", "dim", "numel", "stride", "storage_offset", "is_contiguous", "data_ptr",
    "element_size", "nelement", "untyped_storage", "tolist", "item", "__len__",
    "__bool__", "__format__", "__repr__", "__hash__", "requires_grad_", "numpy", "cpu",
    "empty", "empty_like", "empty_strided",
}  # fmt: skip


@dataclass
class Entry:
    """One distinct shape of one stage: the shapes-file mapping and how often it ran."""

    stage: str
    shape: dict[str, Any]
    calls: int = 0
    sources: list[str] = field(default_factory=list)
    inputs_file: str | None = None


@dataclass
class Recording:
    """What a recording holds: distinct shapes in first-seen order, and what it could not keep."""

    entries: dict[str, Entry] = field(default_factory=dict)
    unreplayable: dict[str, int] = field(default_factory=dict)
    device: str = "cpu"


class Recorder:
    """`with Recorder(stages=[("transformer.*", "dit")]) as rec: model(...)`, then
    `rec.shapes_document(command)`. `roots` names top modules (`{"vae": vae}`); otherwise a
    top module is named after the variable or attribute that holds it in the caller. Calls
    made in other threads are not seen (torch function modes are per thread)."""

    def __init__(
        self,
        stages: Sequence[tuple[str, str]] = (),
        roots: dict[str, torch.nn.Module] | None = None,
        inputs_dir: Path | None = None,
        inputs_budget_bytes: int = 0,
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
        self._mode = _Mode(self)

    def __enter__(self) -> Recorder:
        hooks = torch.nn.modules.module
        self._handles = [
            hooks.register_module_forward_pre_hook(self._enter),
            hooks.register_module_forward_hook(self._leave, always_call=True),
        ]
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # --- where a call comes from ---------------------------------------------------------------

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
        return _held_as(module) or type(module).__name__.lower()

    def _below(self, parent: torch.nn.Module, module: torch.nn.Module) -> str | None:
        """`module`'s path inside `parent` (cached), or None."""
        key = (id(parent), id(module))
        if key not in self._relative:
            found = next((n for n, m in parent.named_modules() if m is module and n), None)
            self._relative[key] = found
        return self._relative[key]

    def path(self) -> str:
        """Module path of the innermost module running now ('' outside any module), along the
        modules actually running: a submodule shared by two parents is named under the one
        that called it."""
        stack = self._stack
        if not stack:
            return ""
        path, previous = self.names.get(stack[0], ""), stack[0]
        for module in stack[1:]:
            below = self._below(previous, module)
            path = f"{path}.{below}" if below is not None else self.names.get(module, path)
            previous = module
        return path

    def stage_of(self, path: str) -> str:
        """The first `--stage PATTERN=STAGE` the path matches, else its top module's name."""
        for pattern, stage in self.stage_patterns:
            if fnmatch.fnmatchcase(path, pattern):
                return stage
        top = path.split(".", 1)[0] if path else "main"
        return re.sub(r"[^A-Za-z0-9_]", "_", top) or "main"

    # --- what a call was -------------------------------------------------------------------

    def observe(self, func: Callable[..., Any], args: tuple, kwargs: dict, result: Any) -> None:
        """Record one call: a replayable shape, or one more call of an op the replay lacks.
        Building the model is not inference: calls on a parameter (initialisers, the casts of
        `model.to(dtype)`), inside `Module._apply` (buffers cast by `.to`) and factories
        without tensor inputs are left out."""
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if not tensors or _in_module_setup() or _sets_up_parameter(func, tensors[0]):
            return
        if self.recording.device == "cpu":
            self.recording.device = str(tensors[0].device.type)
        shape, inputs = _shape_of(func, args, kwargs, result)
        if shape is not None:
            self._add(shape, inputs)
            return
        name = _name_of(func)
        if name and _launches_kernel(name, tensors, result):
            counts = self.recording.unreplayable
            counts[name] = counts.get(name, 0) + 1

    def _add(self, shape: dict[str, Any], inputs: list[torch.Tensor]) -> None:
        path = self.path()
        stage = self.stage_of(path)
        key = json.dumps([stage, shape], sort_keys=True)
        entry = self.recording.entries.get(key)
        if entry is None:
            entry = Entry(stage, shape, inputs_file=self._save(key, inputs))
            self.recording.entries[key] = entry
        entry.calls += 1
        source = re.sub(r"\.\d+(?=\.|$)", ".*", path) or "(no module)"
        if source not in entry.sources:
            entry.sources.append(source)

    def _save(self, key: str, inputs: list[torch.Tensor]) -> str | None:
        """Keep the inputs of a new shape when the budget allows; the file name is their key's
        hash, so a second recording of the same model writes the same names."""
        if self.inputs_dir is None or not inputs:
            return None
        size = sum(t.numel() * t.element_size() for t in inputs)
        if size > self.budget:
            return None
        name = hashlib.sha256(key.encode()).hexdigest()[:16] + ".pt"
        target = self.inputs_dir / name
        partial = target.with_name(f".{name}.partial")
        torch.save([t.detach().to("cpu").contiguous() for t in inputs], partial)
        partial.replace(target)  # a reader sees the whole file or none
        self.budget -= size
        return name

    # --- the shapes file ---------------------------------------------------------------------

    def shapes_document(self, command: str, inputs_prefix: str = "") -> dict[str, Any]:
        """The recording as a shapes-file mapping (validated by `shapes.ShapesFile`)."""
        stages: dict[str, list[dict[str, Any]]] = {}
        for entry in self.recording.entries.values():
            shape = {**entry.shape, "calls": entry.calls, "source": ", ".join(entry.sources)}
            if entry.inputs_file:
                shape["inputs_file"] = inputs_prefix + entry.inputs_file
            stages.setdefault(entry.stage, []).append(shape)
        return {
            "seed": 0,
            "warmup": 3,
            "cudnn_benchmark": False,
            "recorded": {
                "command": command,
                "tool_version": __version__,
                "torch": torch.__version__,
                "device": self.recording.device,
                "unreplayable": dict(sorted(self.recording.unreplayable.items())),
            },
            "stages": stages,
        }


class _Mode(TorchFunctionMode):
    """Hands every torch function call, after it ran, to the recorder."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        try:
            self.recorder.observe(func, args, kwargs, result)
        except Exception as exc:  # recording must never break the user's model
            name = f"(record failed: {_name_of(func) or func}: {type(exc).__name__})"
            counts = self.recorder.recording.unreplayable
            counts[name] = counts.get(name, 0) + 1
        return result


# --- call -> shape ------------------------------------------------------------------------------


def _name_of(func: Any) -> str:
    name = getattr(func, "__name__", "") or ""
    if name == "__get__":
        return ""  # attribute access (tensor.shape, .dtype)
    owner = getattr(func, "__qualname__", name).split(".")[0]
    module = getattr(func, "__module__", "") or ""
    if owner in ("Tensor", "TensorBase", "_TensorBase"):
        return f"Tensor.{name}"
    if module.startswith("torch.nn.functional"):
        return f"F.{name}"
    return f"torch.{name}" if module.startswith("torch") or not module else f"{module}.{name}"


def _launches_kernel(name: str, inputs: list[torch.Tensor], result: Any) -> bool:
    """A call that makes new data: an in-place op (`add_`, `x[i] = y`, `out=`), or a result
    (one tensor or several) that does not share storage with an input (a view shares it)."""
    short = name.rsplit(".", 1)[-1]
    if short in FREE:
        return False
    if short == "__setitem__" or (short.endswith("_") and not short.endswith("__")):
        return True
    results = [r for r in (result if isinstance(result, (tuple, list)) else [result])]
    results = [r for r in results if isinstance(r, torch.Tensor)]
    try:
        taken = {t.untyped_storage().data_ptr() for t in inputs}
        return any(r.untyped_storage().data_ptr() not in taken for r in results)
    except (RuntimeError, NotImplementedError):  # meta or fake tensors
        return bool(results)


_SETUP_CALLS = {"to", "type", "float", "half", "bfloat16", "double", "cuda", "cpu", "copy_"}


def _sets_up_parameter(func: Any, first: torch.Tensor) -> bool:
    """A cast, copy or in-place initialiser of a parameter (`weight.to(bf16)`, `normal_`):
    loading or converting the model, not running it. A parameter used by an op (`addmm(bias,
    x, weight)`) is inference and is recorded."""
    if not isinstance(first, torch.nn.Parameter):
        return False
    name = getattr(func, "__name__", "")
    return name in _SETUP_CALLS or (name.endswith("_") and not name.endswith("__"))


def _shape_of(
    func: Any, args: tuple, kwargs: dict, result: Any
) -> tuple[dict[str, Any] | None, list[torch.Tensor]]:
    """The shapes-file mapping of a replayable call and its input tensors, else (None, [])."""
    for handler in (_linear, _matmul, _conv3d, _conv2d, _attention, _cast):
        found = handler(func, args, kwargs, result)
        if found is not None:
            return found
    return None, []


def _arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _linear(func: Any, args: tuple, kwargs: dict, result: Any) -> Any:
    if func is not F.linear:
        return None
    x, weight = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
    bias = _arg(args, kwargs, 2, "bias")
    if x.dtype not in DTYPE_NAMES or weight.dim() != 2:
        return None
    k, n = weight.shape[1], weight.shape[0]
    shape = _linear_shape(x.numel() // k, n, k, x.dtype, bias is not None)
    return shape, [x.reshape(-1, k), weight, *([bias] if bias is not None else [])]


def _linear_shape(m: int, n: int, k: int, dtype: torch.dtype, bias: bool) -> dict[str, Any]:
    shape: dict[str, Any] = {"op": "linear", "M": m, "N": n, "K": k, "dtype": DTYPE_NAMES[dtype]}
    shape["bias"] = bias
    if dtype == torch.float32:
        shape["allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    return shape


_MATMULS = {torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm, torch.Tensor.__matmul__}


def _matmul(func: Any, args: tuple, kwargs: dict, result: Any) -> Any:
    """A (..., M, K) @ (K, N) product (or addmm with its bias) as a linear: the replay runs
    x @ w.T, the same GEMM with the second operand transposed (noted on the shape)."""
    if func in (torch.addmm, torch.Tensor.addmm):
        names = ("input", "mat1", "mat2")
        bias, a, b = (_arg(args, kwargs, i, n) for i, n in enumerate(names))
        if _arg(args, kwargs, 3, "beta", 1) != 1 or _arg(args, kwargs, 4, "alpha", 1) != 1:
            return None  # scaled: not a plain linear
    elif func in _MATMULS:
        bias, a, b = None, _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "other")
        if b is None:
            b = _arg(args, kwargs, 1, "mat2")
    else:
        return None
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return None
    if b.dim() != 2 or a.dim() < 2 or a.dtype not in DTYPE_NAMES or a.dtype != b.dtype:
        return None  # batched products are not a linear: counted as unreplayable
    k, n = b.shape
    if bias is not None and tuple(bias.shape) not in ((n,), (1, n)):
        return None
    shape = _linear_shape(a.numel() // k, n, k, a.dtype, bias is not None)
    shape["note"] = "recorded from a matmul (x @ w); replayed as F.linear (x @ w.T)"
    tensors = [a.reshape(-1, k), b.t(), *([bias.reshape(-1)] if bias is not None else [])]
    return shape, tensors


def _triple(value: Any) -> list[int] | None:
    if isinstance(value, int):
        return [value] * 3
    if (
        isinstance(value, (tuple, list))
        and len(value) == 3
        and all(isinstance(v, int) for v in value)
    ):
        return list(value)
    return None


def _conv3d(func: Any, args: tuple, kwargs: dict, result: Any) -> Any:
    if func is not F.conv3d:
        return None
    x, weight = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
    bias = _arg(args, kwargs, 2, "bias")
    stride = _triple(_arg(args, kwargs, 3, "stride", 1))
    padding = _arg(args, kwargs, 4, "padding", 0)
    padding = [0, 0, 0] if padding == "valid" else _triple(padding)
    dilation = _triple(_arg(args, kwargs, 5, "dilation", 1))
    groups = _arg(args, kwargs, 6, "groups", 1)
    if None in (stride, padding, dilation) or x.dim() != 5 or x.dtype not in DTYPE_NAMES:
        return None  # padding="same" and unbatched inputs are counted as unreplayable
    last = x.is_contiguous(memory_format=torch.channels_last_3d) and not x.is_contiguous()
    shape: dict[str, Any] = {
        "op": "conv3d",
        "input": list(x.shape),
        "weight": list(weight.shape),
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
        "dtype": DTYPE_NAMES[x.dtype],
        "allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "memory_format": "channels_last_3d" if last else "contiguous",
        "bias": bias is not None,
    }
    return shape, [x, weight, *([bias] if bias is not None else [])]


def _pair(value: Any) -> list[int] | None:
    if isinstance(value, int):
        return [value] * 2
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, int) for v in value)
    ):
        return list(value)
    return None


def _conv2d(func: Any, args: tuple, kwargs: dict, result: Any) -> Any:
    if func is not F.conv2d:
        return None
    x, weight = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
    bias = _arg(args, kwargs, 2, "bias")
    stride = _pair(_arg(args, kwargs, 3, "stride", 1))
    padding = _arg(args, kwargs, 4, "padding", 0)
    padding = [0, 0] if padding == "valid" else _pair(padding)
    dilation = _pair(_arg(args, kwargs, 5, "dilation", 1))
    groups = _arg(args, kwargs, 6, "groups", 1)
    if None in (stride, padding, dilation) or x.dim() != 4 or x.dtype not in DTYPE_NAMES:
        return None  # padding="same" and unbatched inputs are counted as unreplayable
    last = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    shape: dict[str, Any] = {
        "op": "conv2d",
        "input": list(x.shape),
        "weight": list(weight.shape),
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
        "dtype": DTYPE_NAMES[x.dtype],
        "allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "memory_format": "channels_last" if last else "contiguous",
        "bias": bias is not None,
    }
    return shape, [x, weight, *([bias] if bias is not None else [])]


def _attention(func: Any, args: tuple, kwargs: dict, result: Any) -> Any:
    if func is not F.scaled_dot_product_attention:
        return None
    q, k, v = (_arg(args, kwargs, i, name) for i, name in enumerate(("query", "key", "value")))
    mask = _arg(args, kwargs, 3, "attn_mask")
    causal = bool(_arg(args, kwargs, 5, "is_causal", False))
    same = q.dim() == k.dim() == v.dim() == 4 and k.shape[1] == q.shape[1] == v.shape[1]
    if not same or v.shape[-1] != q.shape[-1] or q.dtype not in DTYPE_NAMES:
        return None  # grouped-query, unbatched or another value width: counted as unreplayable
    batch, heads, q_len, head_dim = q.shape
    keys = k.shape[2]
    shape: dict[str, Any] = {
        "op": "attention",
        "backend": "sdpa",
        "batch": batch,
        "heads": heads,
        "head_dim": head_dim,
        "q_len": q_len,
        "valid_keys": keys,
        "role": "self" if keys == q_len else "cross",
        "causal": causal,
        "dtype": DTYPE_NAMES[q.dtype],
    }
    notes = []
    if mask is not None:
        notes.append("the model passed an attention mask; the replay runs without one")
    if _arg(args, kwargs, 4, "dropout_p", 0.0):
        notes.append("the model used dropout; the replay runs without it")
    if notes:
        shape["note"] = "; ".join(notes)
    return shape, [q, k, v]


def _cast(func: Any, args: tuple, kwargs: dict, result: Any) -> Any:
    name = getattr(func, "__name__", "")
    if not (name in ("to", "type") or name in CAST_METHODS) or not args:
        return None
    x = args[0]
    if not isinstance(x, torch.Tensor) or not isinstance(result, torch.Tensor):
        return None
    if result.dtype == x.dtype or x.dtype not in DTYPE_NAMES or result.dtype not in CAST_TARGETS:
        return None
    if x.numel() == 0:
        return None
    shape = {
        "op": "cast",
        "shape": list(x.shape),
        "from": DTYPE_NAMES[x.dtype],
        "to": CAST_TARGETS[result.dtype],
    }
    return shape, [x]


def _in_module_setup() -> bool:
    """True inside `nn.Module._apply` (`model.to(...)`, `.half()`, `.cuda()`) or a module's
    `__init__` (rotary tables, initialisers): building the model, not running it."""
    frame = inspect.currentframe()
    try:
        for _ in range(16):
            if frame is None:
                return False
            code = frame.f_code
            if code.co_name == "_apply" and code.co_filename.endswith("module.py"):
                return True
            if code.co_name == "__init__" and isinstance(
                frame.f_locals.get("self"), torch.nn.Module
            ):
                return True
            frame = frame.f_back
        return False
    finally:
        del frame


def _held_as(module: torch.nn.Module, depth: int = 0) -> str | None:
    """The name a top module goes by in the code that runs it: the child name in the module
    whose method called it (`vae.decode` runs `self.decoder`: `vae.decoder`), the attribute of a
    non-module `self` (a pipeline's `self.transformer`), or a local variable holding it."""
    frame = inspect.currentframe()
    try:
        while frame is not None and depth < 8:
            code = frame.f_code.co_filename.replace("\\", "/")
            if "torch/nn/modules" not in code and not code.endswith("ncu_classify/record.py"):
                local = frame.f_locals
                owner = local.get("self")
                if isinstance(owner, torch.nn.Module) and owner is not module:
                    for attr, child in owner.named_children():
                        if child is module:
                            parent = _held_as(owner, depth + 1) or type(owner).__name__.lower()
                            return f"{parent}.{attr}"
                elif owner is not None and hasattr(owner, "__dict__"):
                    for attr, value in vars(owner).items():
                        if value is module:
                            return attr
                for var, value in local.items():
                    if value is module and var != "self":
                        return var
            frame = frame.f_back
    finally:
        del frame
    return None


@contextmanager
def recording(
    stages: Sequence[tuple[str, str]] = (), roots: dict[str, torch.nn.Module] | None = None
) -> Iterator[Recorder]:
    """`with recording(stages=[("vae.*", "vae")]) as rec:` around the user's own code."""
    recorder = Recorder(stages, roots)
    with recorder:
        yield recorder


def validated_document(recorder: Recorder, command: str, inputs_prefix: str = "") -> dict:
    """The shapes document with every shape validated as the shapes file will be: a shape the
    replay cannot take (a dimension it refuses) moves to `unreplayable`; shapes that come out
    with one group id (a matmul and a linear of one size) merge, adding their calls."""
    from pydantic import TypeAdapter, ValidationError

    from .shapes import Shape, group_id

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
    dumps = _yaml_scalar
    lines = [
        f"# Recorded by ncu-classify {recorded['tool_version']}: {len(_flat(document))} distinct"
        f" shapes, {sum(s['calls'] for s in _flat(document))} calls.",
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
