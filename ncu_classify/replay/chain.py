"""Replay of a recorded chain (`shapes.chains`) as one Python function: its inputs drawn as an
`aten` shape's are (views of seeded storages with the recorded layouts, integers inside the
first floating-point input's smallest size; `replay.aten`), its ops called through `torch.ops`
one after the other, each tensor argument an input or an earlier op's output (rebuilt by
`as_strided` where the recording saw another view of it), its outputs returned; a 0-d input
with a recorded value (a float the program passed, lifted into a host tensor) holds it. Run
eagerly, or compiled as one function by `torch.compile` (Inductor, default options): the
measured fusion saving of a chain is the difference. Works on a GPU and on the CPU (Inductor
compiles for both). A chain the replay would not reproduce (an op whose work depends on the
values, no ops) raises NotReplayable; inputs an op writes are private copies, restored by
`reset`."""

from __future__ import annotations

import hashlib
import importlib
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from ruamel.yaml.scalarbool import ScalarBoolean

from ..shapes.chain_shape import ChainShape
from ..shapes.chains import SIZE_FUNCTIONS, Chain, links
from .aten import (
    DTYPES,
    NotReplayable,
    Storages,
    argument_names,
    index_bound,
    resolve,
    written_arguments,
)

Mode = Literal["eager", "compile"]
InductorOptions = dict[str, str | int | float | bool]  # torch.compile's `options`
DATA_DEPENDENT_WHY = "depends on the values"  # the recorder's words for such an op


@dataclass
class PreparedChain:
    """A chain ready to run: `run()` runs it once and returns its outputs (the chain's outputs
    in order); `inputs` are the tensors it takes; `reset` (when an op writes an input) restores
    them; `function` is the uncompiled body (`function(*inputs)`); `input_sha256` names the
    inputs. Unpacks as `(run, inputs)`."""

    run: Callable[[], list[torch.Tensor]]
    inputs: list[torch.Tensor]
    reset: Callable[[], None] | None
    function: Callable[..., list[torch.Tensor]]
    input_sha256: str

    def __iter__(self) -> Any:
        return iter((self.run, self.inputs))


def chain_runner(
    chain: Chain,
    mode: Mode,
    device: str,
    seed: int = 0,
    storages: Storages | None = None,
    compile_mode: str | InductorOptions | None = None,
) -> PreparedChain:
    """The chain as one function on `device` ("cuda", "cpu"), eager or compiled, with its
    inputs drawn from `seed` (the same bytes as an `aten` shape's draws of those layouts)."""
    if mode not in ("eager", "compile"):
        raise ValueError(f"mode {mode!r}: eager or compile")
    if not chain.ops:
        raise NotReplayable(f"{chain.name}: no ops ({'; '.join(chain.untied)})")
    dependent = [why for why in chain.untied if DATA_DEPENDENT_WHY in why or "mask" in why]
    if dependent:
        raise NotReplayable(f"{chain.name}: {dependent[0]}")
    storages = storages or Storages()
    plan = [(_resolved(op.overload), op) for op in chain.ops]
    inputs, written, digest = _drawn(chain, plan, seed, device, storages)
    leaving = [o.model_dump() for o in chain.outputs]  # links: a ref, maybe its view
    function = _body(plan, leaving, device)
    originals = [t.clone() for t in inputs] if written else []
    if mode == "compile":  # writes through plain views, as the program made them
        function = _function(*_named_views(_steps(plan), leaving, inputs, device), device)
        for number in written:
            inputs[number].copy_(originals[number])
    # one graph or an error: a graph break would time pieces of the chain, not the chain
    # static sizes, a first compile of its own (not a recompile of the batch's other chains)
    compiled = function
    if mode == "compile":
        own, how = own_code(function), _how(compile_mode)
        compiled = torch.compile(own, fullgraph=True, dynamic=False, **how)  # type: ignore[call-overload]
        for tensor, given in zip(inputs, chain.inputs, strict=True):
            dims = [d for d in given.dynamic if tensor.shape[d] > 1]  # (0 and 1 are never)
            if dims:  # symbolic where the program's graph was: the program's kernels
                torch._dynamo.mark_dynamic(tensor, dims)

    def reset() -> None:
        for number in written:
            inputs[number].copy_(originals[number])

    return PreparedChain(
        run=lambda: compiled(*inputs),
        inputs=inputs,
        reset=reset if written else None,
        function=function,
        input_sha256=digest,
    )


def own_code(function: Callable[..., Any]) -> Callable[..., Any]:
    """The function with a code object of its own. dynamo keeps its graphs per code object,
    and every chain's function (every typed shape's op of one kind) shares one: the second
    shape of a batch (a replay process) was compiled again as a recompile of the first, with
    dynamic sizes where they differed (other kernels than the program's), and past dynamo's
    recompile limit (8) not at all. A callable that is no plain function (a partial) is
    called by one."""
    if not isinstance(function, types.FunctionType):
        called = function
        function = lambda *args, **kwargs: called(*args, **kwargs)  # noqa: E731
    code = function.__code__.replace()
    return types.FunctionType(
        code, function.__globals__, function.__name__, function.__defaults__,
        function.__closure__,
    )  # fmt: skip


def _resolved(name: str) -> Any:
    """The callable of a chain op: `torch.ops.<overload>`, or a size function
    (`size.mul.default`: `operator.mul`)."""
    namespace, function, _ = name.split(".", 2) if name.count(".") >= 2 else (name, "", "")
    if namespace == "size" and function in SIZE_FUNCTIONS:
        return getattr(importlib.import_module(SIZE_FUNCTIONS[function]), function)
    return resolve(name)


def _how(compile_mode: str | InductorOptions | None) -> dict[str, object]:
    """torch.compile's keywords for a mode (`mode=`) or Inductor options (`options=`)."""
    if isinstance(compile_mode, dict):
        return {"options": compile_mode}
    return {"mode": compile_mode}


def replay_mode(shape: ChainShape) -> str | InductorOptions | None:
    """How a compiled region replays: the program's Inductor mode or options, without CUDA
    graphs (ncu profiles kernels, not graph launches): max-autotune's kernels, reduce-overhead's
    default ones, the options as given."""
    options = getattr(shape, "options", None)
    if options:
        return {**options, "triton.cudagraphs": False}
    mode = getattr(shape, "mode", None)
    return "max-autotune-no-cudagraphs" if mode and "max-autotune" in mode else None


def _drawn(
    chain: Chain, plan: list[tuple[Any, Any]], seed: int, device: str, storages: Storages
) -> tuple[list[torch.Tensor], list[int], str]:
    """The chain's inputs (views of drawn storages), the numbers of those an op writes (private
    copies), and the sha256 naming them."""
    written: list[int] = []
    for op, shape in plan:
        names = set(written_arguments(op)) if isinstance(op, torch._ops.OpOverload) else set()
        if not names:
            continue
        named = zip(argument_names(op, len(shape.args)), shape.args, strict=True)
        values = [v for n, v in named if n in names]
        values += [v for k, v in shape.kwargs.items() if k in names]
        for link in links(values):
            if "input" in link and link["input"] not in written:
                written.append(link["input"])
    specs = [item.tensor for item in chain.inputs]
    bound = index_bound(specs)
    digest = hashlib.sha256()
    inputs = []
    for number, (spec, given) in enumerate(zip(specs, chain.inputs, strict=True)):
        if spec.dtype not in DTYPES:
            raise NotReplayable(f"{chain.name}: dtype {spec.dtype} is not one the replay draws")
        where = "cpu" if spec.device == "cpu" else device
        integral = not spec.dtype.startswith(("float", "bfloat", "complex"))
        key = (seed, number, spec.span(), spec.dtype, bound if integral else 0)
        storage, sha = storages.get(key, where)
        if number in written or given.value is not None:
            storage = storage.clone()
        if given.value is not None:  # the number the program passed (a lifted float)
            storage.fill_(given.value)
            sha = f"value {given.value!r}"
        digest.update(f"{sha} {spec.shape} {spec.strides} {spec.offset};".encode())
        inputs.append(torch.as_strided(storage, spec.shape, spec.strides, spec.offset))
    return inputs, sorted(written), digest.hexdigest()


def _body(
    plan: list[tuple[Any, Any]], outputs: list[dict[str, Any]], device: str
) -> Callable[..., list[torch.Tensor]]:
    """The chain as a function of its inputs: every op in order, its outputs returned."""
    return _function(_steps(plan), outputs, device)


def _steps(plan: list[tuple[Any, Any]]) -> list[tuple[Any, Any, Any]]:
    """Each op with its arguments as plain lists and dicts."""
    return [(op, _plain(shape.args), _plain(shape.kwargs)) for op, shape in plan]


def _function(
    steps: list[tuple[Any, Any, Any]], outputs: list[Any], device: str
) -> Callable[..., list[torch.Tensor]]:
    """Run `steps` on the inputs given; the chain's outputs returned."""

    def function(*inputs: torch.Tensor) -> list[torch.Tensor]:
        values: list[list[torch.Tensor]] = []
        for op, args, kwargs in steps:
            built = {k: _value(v, inputs, values) for k, v in kwargs.items()}
            if "device" in built and built["device"] is None:
                built["device"] = device  # a factory: on the replay's device
            result = op(*[_value(a, inputs, values) for a in args], **built)
            values.append(_tensors(result))
        return [_value(link, inputs, values) for link in outputs]

    return function


def _value(arg: Any, inputs: Any, values: list[list[torch.Tensor]]) -> Any:
    """An argument as the op takes it: a tensor link resolved, a dtype name as the dtype."""
    if isinstance(arg, dict) and "input" in arg:
        return inputs[arg["input"]]
    if isinstance(arg, dict) and "ref" in arg:
        tensor = values[arg["ref"][0]][arg["ref"][1]]
        view = arg.get("as_strided")
        if view is None:
            return tensor
        return torch.as_strided(tensor, view["shape"], view["strides"], view["offset"])
    if isinstance(arg, dict) and "float" in arg:
        return float(arg["float"])
    if isinstance(arg, list):
        return [_value(a, inputs, values) for a in arg]
    if isinstance(arg, str) and isinstance(
        getattr(torch, arg, None), (torch.dtype, torch.memory_format, torch.layout)
    ):
        return getattr(torch, arg)
    return arg


def _named_views(
    steps: list[tuple[Any, Any, Any]], outputs: list[Any], inputs: list[torch.Tensor], device: str
) -> tuple[list[tuple[Any, Any, Any]], list[Any]]:
    """The steps and outputs with each `as_strided` link replaced by the earlier tensor that is
    exactly that view (same storage, sizes, strides and offset), found by running it once:
    Inductor refuses a write through an as_strided view (pytorch#104505), and the program
    wrote through the plain view (a slice) that the recording saw as an earlier output."""
    values: list[list[torch.Tensor]] = []
    known: list[tuple[torch.Tensor, dict[str, list[int] | int]]] = [
        (t, {"input": n}) for n, t in enumerate(inputs)
    ]

    def named(arg: Any) -> Any:
        """`arg` with each `as_strided` link named by the earlier tensor that is that view."""
        if isinstance(arg, list):
            return [named(a) for a in arg]
        if not (isinstance(arg, dict) and "as_strided" in arg):
            return arg
        view = _value(arg, inputs, values)
        same = [link for t, link in reversed(known) if _same_view(t, view)]
        return same[0] if same else arg

    rewritten = []
    with torch.no_grad():
        for op, args, kwargs in steps:
            args, kwargs = named(args), {k: named(v) for k, v in kwargs.items()}
            rewritten.append((op, args, kwargs))
            built = {k: _value(v, inputs, values) for k, v in kwargs.items()}
            if "device" in built and built["device"] is None:
                built["device"] = device
            values.append(_tensors(op(*[_value(a, inputs, values) for a in args], **built)))
            made = enumerate(values[-1])  # (a size op's number is no view)
            known += [(t, {"ref": [len(values) - 1, n]}) for n, t in made if torch.is_tensor(t)]
    return rewritten, [named(link) for link in outputs]


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are the same view of the same storage."""
    return (
        a.dtype == b.dtype
        and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.shape == b.shape
        and a.stride() == b.stride()
        and a.storage_offset() == b.storage_offset()
    )


def _plain(value: Any) -> Any:
    """An argument as plain lists, dicts and scalars: a YAML reader's own mappings and numbers
    are not what torch.compile traces through (torch 2.11's dynamo will not index a list with
    ruamel's `ScalarInt`)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    for kind in (bool, ScalarBoolean, int, float, str):  # (booleans first: they are ints)
        if isinstance(value, kind):
            return bool(value) if kind is ScalarBoolean else kind(value)
    return value


def _tensors(result: Any) -> list[Any]:
    """The tensors an op returned, in order (as the recorder listed its outputs); a size op's
    number, its one output."""
    if isinstance(result, (torch.Tensor, int, float, torch.SymInt, torch.SymFloat, torch.SymBool)):
        return [result]
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in _tensors(r)]
    return []
