"""A compiled region's graph as the ops of a chain (`shapes.chains.Chain`): the FX graph that
dynamo handed its backend, traced again to ATen ops (`make_fx`) on fake tensors of the
layouts the program passed, so that capture replays it as one function compiled by Inductor,
as the program ran it, and the user sees which ops it holds. Traced after the program ran,
outside dynamo's compile (tracing inside would add guards to dynamo's shape environment).

A Python float dynamo lifted into a one-element host tensor (a float that changed between
calls, a norm's scale under dynamic shapes) stays an input of the chain, `device: cpu` with
its value, wherever the graph only does arithmetic with it: Inductor's pass for such floats
(`tensorify_python_scalars`) makes that arithmetic tensor ops on the host tensor, so the
program's kernels read the float as an argument, and fuse around it, as a constant would not
(the H200's Wan decode, read as constants: 13 of 21 graphs other kernels than the program's)."""

from __future__ import annotations

import copy
import math
import operator
import sys
from typing import Any, Literal

import torch
from torch.fx import Node

from ..shapes.aten import TensorSpec
from ..shapes.chains import SIZE_FUNCTIONS, Chain, ChainInput, ChainOp, ChainOutput
from .region_graph import InputLayout

DTYPE_NAMES = {
    torch.float64: "float64", torch.float32: "float32", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.complex64: "complex64", torch.complex128: "complex128",
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
    torch.uint8: "uint8", torch.bool: "bool",
}  # fmt: skip
SIZES = (torch.SymInt, torch.SymFloat, torch.SymBool)  # a dynamic graph's symbolic numbers
Link = dict[str, int | list[int]]  # {"input": k} or {"ref": [op, output]}: a chain's links
# what the program's Inductor makes a tensor op on the lifted float (tensorify_python_scalars)
ARITHMETIC = {
    operator.mul, operator.add, operator.sub, operator.truediv, operator.neg, operator.pow,
    torch.mul, torch.add, torch.sub, torch.div, torch.true_divide,
}  # fmt: skip
ARITHMETIC_METHODS = {"mul", "add", "sub", "div", "true_divide", "__mul__", "__rmul__"}


def constants_folded(graph: torch.fx.GraphModule, inputs: list[InputLayout]) -> Any:
    """A copy of the graph in which every `.item()` of an input holding a known host scalar
    is that input itself where the graph only does arithmetic with it (`tensor_arithmetic`),
    else that number (fake tensors have no values to read, so tracing it would fail); the
    graph as it is when there is none."""
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    known = {
        node.name: layout.constant
        for node, layout in zip(placeholders, inputs, strict=False)
        if layout.constant is not None
        and any(u.op == "call_method" and u.target == "item" for u in node.users)
    }
    if not known:
        return graph
    folded = copy.deepcopy(graph.graph)
    for node in [n for n in folded.nodes if n.op == "placeholder" and n.name in known]:
        for item in [u for u in node.users if u.op == "call_method" and u.target == "item"]:
            if isinstance(known[node.name], float) and tensor_arithmetic(item):
                item.replace_all_uses_with(node)
                folded.erase_node(item)
                continue
            for use in list(item.users):
                swap = lambda n, item=item, v=known[node.name]: v if n is item else n  # noqa: E731
                use.args = torch.fx.node.map_arg(use.args, swap)
                use.kwargs = torch.fx.node.map_arg(use.kwargs, swap)
            folded.erase_node(item)
    return torch.fx.GraphModule(graph, folded)


def tensor_arithmetic(node: torch.fx.Node) -> bool:
    """Whether every use of a scalar node is arithmetic that ends in a floating-point tensor
    (`x * scale`), maybe through other scalars (`scale * 2.0`), the scalar an operand (not a
    keyword such as `alpha`): what Inductor computes on the host tensor, and where a 0-d
    float64 tensor in the float's place makes a tensor of the same dtype."""
    if not node.users:
        return False
    for use in node.users:
        arithmetic = use.target in (ARITHMETIC if use.op == "call_function" else ())
        arithmetic |= use.op == "call_method" and use.target in ARITHMETIC_METHODS
        if not arithmetic or node not in use.args or node in use.kwargs.values():
            return False
        made = use.meta.get("example_value")
        if isinstance(made, torch.Tensor):
            operands = [a.meta.get("example_value") for a in use.args if isinstance(a, Node)]
            tensors = [t for t in operands if isinstance(t, torch.Tensor)]
            if made.dim() == 0 or not all(t.dtype.is_floating_point for t in tensors):
                return False
        elif not (isinstance(made, (float, torch.SymFloat)) and tensor_arithmetic(use)):
            return False
    return True


def traced_chain(
    graph: torch.fx.GraphModule, inputs: list[InputLayout], name: str, calls: int
) -> Chain:
    """The graph as a chain (shapes.chains), traced to ATen ops on fake tensors; ValueError
    names what cannot be one. A dynamic graph's symbolic sizes stay symbolic (its size
    arithmetic, size ops of the chain): Inductor made other kernels of them than of the
    same sizes known (the H200's Wan decode: recompiled graphs 2-11x slower than static)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    dims, ties, same = dynamic_sizes(graph)
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv() if dims else None)
    folded = constants_folded(graph, inputs)
    with mode:
        given = [
            _fake(i, dims.get(k, []), mode, k) if i.dtype is not None else i.value
            for k, i in enumerate(inputs)
        ]
        positions = [k for k, value in enumerate(given) if isinstance(value, torch.Tensor)]

        def body(*tensors: torch.Tensor) -> Any:
            """The graph on the tensors; a size it takes, that of the tensor it came from."""
            args: list[Any] = list(given)
            for position, tensor in zip(positions, tensors, strict=True):
                args[position] = tensor
            for position, (source, dim) in ties.items():
                args[position] = args[source].size(dim)
            for (a, dim_a), (b, dim_b) in same:  # one symbol in the program: said (one in
                equal = args[a].size(dim_a) == args[b].size(dim_b)  # the replay's compile too)
                torch.ops.aten._assert_scalar(equal, "one size in the program")
            return folded(*args)

        tracing: Literal["symbolic", "real"] = "symbolic" if dims else "real"
        traced = make_fx(body, tracing_mode=tracing)(*[given[k] for k in positions])
    return _as_chain(traced, name, calls, [inputs[k] for k in positions])


def dynamic_sizes(graph: torch.fx.GraphModule) -> tuple[
    dict[int, list[int]], dict[int, tuple[int, int]], list[tuple[tuple[int, int], ...]]
]:  # fmt: skip
    """The dims of each tensor input that were symbolic in the program's graph (dynamo's
    example values of its placeholders), each size input tied to the tensor dim it is
    (input k: (tensor input, dim)), and each dim that was the same symbol as an earlier one
    ((input, dim) pairs: dynamo duck-sizes equal sizes under `dynamic=True`, not those it
    made dynamic on a recompile or `mark_dynamic`); empty for a static graph."""
    values = [n.meta.get("example_value") for n in graph.graph.nodes if n.op == "placeholder"]
    dims: dict[int, list[int]] = {}
    where: dict[Any, tuple[int, int]] = {}
    same: list[tuple[tuple[int, int], ...]] = []
    for number, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            sizes: list[Any] = list(value.shape)
            found = [d for d, size in enumerate(sizes) if _symbolic(size)]
            dims.update({number: found} if found else {})
            for dim in found:
                first = where.setdefault(sizes[dim].node.expr, (number, dim))
                same += [(first, (number, dim))] if first != (number, dim) else []
    ties = {
        number: where[value.node.expr]
        for number, value in enumerate(values)
        if isinstance(value, torch.SymInt) and value.node.expr in where
    }
    return dims, ties, same


def _symbolic(size: Any) -> bool:
    """A size with a symbol in it (not one dynamo specialized to a number)."""
    return isinstance(size, torch.SymInt) and bool(size.node.expr.free_symbols)


def _fake(layout: InputLayout, dims: list[int], mode: Any, number: int) -> torch.Tensor:
    """A fake tensor of an input's layout (its storage offset kept), its `dims` symbolic,
    each a symbol of its own, as the replay's `mark_dynamic` makes them (not one symbol for
    equal sizes: `traced_chain` says where the program's graph had one)."""
    from torch._dynamo.source import LocalSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    assert layout.dtype is not None
    shape: tuple[Any, ...] = layout.shape
    strides: tuple[Any, ...] = layout.strides
    if dims:
        meta = torch.empty_strided(shape, strides, dtype=layout.dtype, device="meta")
        kinds = [DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC for d in range(len(shape))]
        shape, strides, _ = mode.shape_env.create_symbolic_sizes_strides_storage_offset(
            meta, LocalSource(f"input{number}"),
            symbolic_context=StatelessSymbolicContext(dynamic_sizes=kinds),
        )  # fmt: skip
    if not layout.offset:
        return torch.empty_strided(shape, strides, dtype=layout.dtype, device=layout.device)
    steps = zip(shape, strides, strict=True)
    reach = -1 if 0 in layout.shape else sum((n - 1) * s for n, s in steps)
    base = torch.empty(layout.offset + 1 + reach, dtype=layout.dtype, device=layout.device)
    return base.as_strided(shape, strides, layout.offset)


def _as_chain(
    traced: torch.fx.GraphModule, name: str, calls: int, layouts: list[InputLayout]
) -> Chain:
    """The traced graph's nodes as chain ops: placeholders are inputs (a host scalar the
    program passed: on the host, with its value), as are the constant tensors tracing lifted
    (`get_attr`: its values drawn, as an input's), getitem an output index."""
    links: dict[torch.fx.Node, Link] = {}
    inputs: list[ChainInput] = []
    ops: list[ChainOp] = []
    outputs: list[ChainOutput] = []
    placeholders = 0
    for node in traced.graph.nodes:
        value = node.meta.get("val")
        if node.op == "get_attr":  # a tensor made in the region (`torch.tensor([...])`): drawn
            value = _attribute(traced, str(node.target))
        if node.op in ("placeholder", "get_attr"):
            known = node.op == "placeholder" and placeholders < len(layouts)
            layout = layouts[placeholders] if known else None
            placeholders += node.op == "placeholder"
            if isinstance(value, torch.Tensor):
                links[node] = {"input": len(inputs)}
                origin = "compiled region " + ("input" if node.op == "placeholder" else "constant")
                inputs.append(_input(value, origin, layout))
        elif node.op == "call_function" and node.target is operator.getitem:
            source = links.get(node.args[0], {}).get("ref")
            if isinstance(source, list):
                links[node] = {"ref": [source[0], int(node.args[1])]}
        elif node.op == "call_function" and (
            isinstance(value, SIZES) or _size_function(node.target) is not None
        ):  # a size op of a dynamic graph, or arithmetic on sizes: a number
            overload = _size_function(node.target)
            if overload is None and isinstance(node.target, torch._ops.OpOverload):
                overload = _overload(node.target)  # aten.sym_size.int, aten.sym_numel.default
            if overload is None or not isinstance(value, (*SIZES, int, float, bool)):
                named = getattr(node.target, "__name__", node.target)  # (no address)
                raise ValueError(f"{named}: size arithmetic the chain does not know")
            args = [_argument(a, links) for a in node.args]
            kwargs = {k: _argument(v, links) for k, v in node.kwargs.items()}
            links[node] = {"ref": [len(ops), 0]}
            ops.append(ChainOp(overload=overload, args=args, kwargs=kwargs, value=_hint(value)))
        elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            made = value if isinstance(value, (list, tuple)) else [value]
            specs = [_spec(t) for t in made if isinstance(t, torch.Tensor)]
            args = [_argument(a, links) for a in node.args]
            kwargs = {k: _argument(v, links) for k, v in node.kwargs.items()}
            links[node] = {"ref": [len(ops), 0]}
            ops.append(
                ChainOp(overload=_overload(node.target), args=args, kwargs=kwargs, outputs=specs)
            )
        elif node.op == "output":
            refs = [links[n].get("ref") for n in _nodes(node.args[0]) if n in links]
            outputs = [ChainOutput(ref=list(r)) for r in refs if isinstance(r, list)]
        else:
            raise ValueError(f"{node.op} {node.target}: not an ATen op")
    return Chain(name=name, calls=calls, inputs=inputs, ops=ops, outputs=outputs)


def _size_function(target: Any) -> str | None:
    """`size.mul.default` for `operator.mul` (a size function of `shapes.chains`), else None."""
    name = getattr(target, "__name__", None)
    module = SIZE_FUNCTIONS.get(name or "")
    if name is None or module is None or getattr(sys.modules.get(module), name, None) is not target:
        return None
    return f"size.{name}.default"


def _hint(value: Any) -> int | float | bool:
    """A number as the program had it: a symbolic one by its hint (what it was)."""
    if isinstance(value, SIZES):
        hint = value.node.hint
        if hint is None:  # a size only the values decide (unbacked): no number to keep
            raise ValueError(f"{value}: a size the values decide")
        return hint  # type: ignore[no-any-return]
    return value  # type: ignore[no-any-return]


def _input(tensor: torch.Tensor, origin: str, layout: InputLayout | None) -> ChainInput:
    """A chain input: a host scalar the program passed (a lifted float) on the host with its
    value, as the program's kernels read it; any other tensor by its layout alone, its
    symbolic dims (a dynamic graph's) named."""
    number = None if layout is None else layout.constant
    dynamic = [d for d, size in enumerate(tensor.shape) if _symbolic(size)]
    if number is None or tensor.dim() != 0 or not math.isfinite(number):
        return ChainInput(tensor=_spec(tensor), origins=[origin], dynamic=dynamic)
    spec = _spec(tensor).model_copy(update={"device": "cpu"})
    return ChainInput(tensor=spec, origins=[origin], value=number)


def _attribute(traced: torch.fx.GraphModule, target: str) -> Any:
    """A `get_attr` node's value: the constant tensor tracing lifted (None for another)."""
    value: Any = traced
    for name in target.split("."):
        value = getattr(value, name, None)
    return value


def _overload(target: torch._ops.OpOverload) -> str:
    """`aten.mm.default`."""
    return f"{target.namespace}.{target._schema.name.split('::')[-1]}.{target._overloadname}"


def _nodes(value: Any) -> list[torch.fx.Node]:
    """The FX nodes inside an output value (a node, or lists and tuples of them)."""
    if isinstance(value, torch.fx.Node):
        return [value]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _nodes(v)]
    return []


def _argument(value: Any, links: dict[torch.fx.Node, Link]) -> Any:
    """One argument in the chain grammar: a link, a number, a name (dtype, layout, memory
    format), a list; a device is the replay's (None)."""
    if isinstance(value, torch.fx.Node):
        if value not in links:
            raise ValueError(f"{value.name}: not a tensor the chain holds")
        return links[value]
    if isinstance(value, (list, tuple)):
        return [_argument(v, links) for v in value]
    if isinstance(value, torch.dtype):
        return DTYPE_NAMES.get(value, str(value).removeprefix("torch."))
    if isinstance(value, (torch.layout, torch.memory_format)):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return None
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return {"float": str(value)}
    return value


def _spec(tensor: torch.Tensor) -> TensorSpec:
    """A tensor's layout as a chain's `TensorSpec`."""
    return TensorSpec.model_validate(
        {
            "shape": [_hint(n) for n in tensor.shape],
            "dtype": DTYPE_NAMES.get(tensor.dtype, str(tensor.dtype).removeprefix("torch.")),
            "strides": [_hint(s) for s in tensor.stride()],
            "offset": _hint(tensor.storage_offset()),
        }
    )
