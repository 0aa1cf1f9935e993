"""From one torch call to a shapes-file mapping: the call's shape (linear, matmul, conv2d/3d,
SDPA, cast) and its inputs, each input's strides and storage offset where it was no plain
tensor (`layout`) and SDPA's mask, dropout and scale, or whether it only builds the model (a
parameter cast or initialiser). Calls that are no typed shape are left to the device ops they
dispatch."""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn.functional as F

from .shapes_document import CallShape

# The keyword arguments of a call made by someone else (the user's program, torch's dispatch,
# an exit function), as Python hands them on: any names, any values, no shape of ours.
CallKwargs = dict[str, Any]
DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
CAST_TARGETS = {**DTYPE_NAMES, torch.uint8: "uint8"}
CAST_METHODS = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16}
_SETUP_CALLS = {"to", "type", "float", "half", "bfloat16", "double", "cuda", "cpu", "copy_"}


def name_of(func: Any) -> str:
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


def sets_up_parameter(func: Any, first: torch.Tensor) -> bool:
    """A cast, copy or in-place initialiser of a parameter (`weight.to(bf16)`, `normal_`):
    loading or converting the model, not running it. A parameter used by an op (`addmm(bias,
    x, weight)`) is inference and is recorded."""
    if not isinstance(first, torch.nn.Parameter):
        return False
    name = getattr(func, "__name__", "")
    return name in _SETUP_CALLS or (name.endswith("_") and not name.endswith("__"))


def in_module_setup() -> bool:
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


def shape_of(
    func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any
) -> tuple[CallShape | None, list[torch.Tensor]]:
    """The shapes-file mapping of a replayable call and its input tensors, else (None, [])."""
    for handler in (_linear, _matmul, _conv, _attention, _cast):
        found: tuple[CallShape | None, list[torch.Tensor]] | None = handler(
            func, args, kwargs, result
        )
        if found is not None:
            return found
    return None, []


def _arg(
    args: tuple[Any, ...], kwargs: CallKwargs, index: int, name: str, default: Any = None
) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _linear(func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any) -> Any:
    if func is not F.linear:
        return None
    x, weight = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
    bias = _arg(args, kwargs, 2, "bias")
    if x.dtype not in DTYPE_NAMES or weight.dim() != 2:
        return None
    k, n = weight.shape[1], weight.shape[0]
    shape = _linear_shape(x.numel() // k, n, k, x.dtype, bias is not None)
    _lay_out(
        shape, {"x": (x, (x.numel() // k, k)), "weight": (weight, (n, k)), "bias": (bias, (n,))}
    )
    return shape, [x.reshape(-1, k), weight, *([bias] if bias is not None else [])]


def _linear_shape(m: int, n: int, k: int, dtype: torch.dtype, bias: bool) -> CallShape:
    shape: CallShape = {"op": "linear", "M": m, "N": n, "K": k, "dtype": DTYPE_NAMES[dtype]}
    shape["bias"] = bias
    if dtype == torch.float32:
        shape["allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    return shape


_MATMULS = {torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm, torch.Tensor.__matmul__}


def _matmul(func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any) -> Any:
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
        return None  # batched products are not a linear: recorded as their device ops
    k, n = b.shape
    if bias is not None and tuple(bias.shape) not in ((n,), (1, n)):
        return None
    shape = _linear_shape(a.numel() // k, n, k, a.dtype, bias is not None)
    shape["note"] = "recorded from a matmul (x @ w); replayed as F.linear (x @ w.T)"
    # w = b.t(): plain when b is contiguous (the note's x @ w.T) or a transposed weight
    w = None if b.is_contiguous() else b.t()
    named = {"x": (a, (a.numel() // k, k)), "weight": (w, (n, k)), "bias": (bias, (n,))}
    _lay_out(shape, named)
    tensors = [a.reshape(-1, k), b.t(), *([bias.reshape(-1)] if bias is not None else [])]
    return shape, tensors


def _dims(value: Any, count: int) -> list[int] | None:
    """stride/padding/dilation as `count` ints (an int stands for all), else None."""
    if isinstance(value, int):
        return [value] * count
    if isinstance(value, (tuple, list)) and len(value) == count:
        return list(value) if all(isinstance(v, int) for v in value) else None
    return None


# op name, spatial dims, and the name of its channels-last memory format in the shapes file
_CONVS = {F.conv3d: ("conv3d", 3, "channels_last_3d"), F.conv2d: ("conv2d", 2, "channels_last")}
_LAYOUTS = {"channels_last_3d": torch.channels_last_3d, "channels_last": torch.channels_last}


def _conv(func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any) -> Any:
    """F.conv2d or F.conv3d; padding="same" and unbatched inputs are left to their device ops."""
    if func not in _CONVS:
        return None
    op, spatial, layout = _CONVS[func]
    x, weight = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
    bias = _arg(args, kwargs, 2, "bias")
    stride = _dims(_arg(args, kwargs, 3, "stride", 1), spatial)
    padding = _arg(args, kwargs, 4, "padding", 0)
    padding = [0] * spatial if padding == "valid" else _dims(padding, spatial)
    dilation = _dims(_arg(args, kwargs, 5, "dilation", 1), spatial)
    groups = _arg(args, kwargs, 6, "groups", 1)
    if None in (stride, padding, dilation) or x.dim() != spatial + 2:
        return None
    if x.dtype not in DTYPE_NAMES:
        return None
    last = x.is_contiguous(memory_format=_LAYOUTS[layout]) and not x.is_contiguous()
    shape: CallShape = {
        "op": op,
        "input": list(x.shape),
        "weight": list(weight.shape),
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
        "dtype": DTYPE_NAMES[x.dtype],
        "allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "memory_format": layout if last else "contiguous",
        "bias": bias is not None,
    }
    plain = _LAYOUTS[layout] if last else torch.contiguous_format
    named = {"input": (x, tuple(x.shape)), "weight": (weight, tuple(weight.shape))}
    _lay_out(shape, {**named, "bias": (bias, (weight.shape[0],))}, plain)
    return shape, [x, weight, *([bias] if bias is not None else [])]


def _attention(func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any) -> Any:
    if func is not F.scaled_dot_product_attention:
        return None
    q, k, v = (_arg(args, kwargs, i, name) for i, name in enumerate(("query", "key", "value")))
    mask = _arg(args, kwargs, 3, "attn_mask")
    causal = bool(_arg(args, kwargs, 5, "is_causal", False))
    same = q.dim() == k.dim() == v.dim() == 4 and k.shape[1] == q.shape[1] == v.shape[1]
    if not same or v.shape[-1] != q.shape[-1] or q.dtype not in DTYPE_NAMES:
        return None  # grouped-query, unbatched or another value width: left to device ops
    if mask is not None and not (isinstance(mask, torch.Tensor) and mask.dtype in MASK_DTYPES):
        return None  # a mask of another dtype: left to device ops
    batch, heads, q_len, head_dim = q.shape
    keys = k.shape[2]
    shape: CallShape = {
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
    _lay_out(shape, {name: (t, tuple(t.shape)) for name, t in zip(_QKV, (q, k, v), strict=True)})
    if mask is not None:
        shape["mask"] = _mask(mask)
    dropout = _arg(args, kwargs, 4, "dropout_p", 0.0)
    if dropout:
        shape["dropout_p"] = float(dropout)
    if (scale := _arg(args, kwargs, 6, "scale")) is not None:
        shape["scale"] = float(scale)
    if _arg(args, kwargs, 7, "enable_gqa"):  # False, as diffusers passes it, is SDPA's default
        shape["enable_gqa"] = True
    return shape, [q, k, v]


_QKV = ("query", "key", "value")
MASK_DTYPES = {torch.bool: "bool", **DTYPE_NAMES}


def _mask(mask: torch.Tensor) -> CallShape:
    """SDPA's attn_mask as the shape keeps it: dims, dtype, strides, storage offset (no
    values: reading them would stop the program on a GPU)."""
    return {
        "shape": list(mask.shape),
        "dtype": MASK_DTYPES[mask.dtype],
        "strides": list(mask.stride()),
        "offset": mask.storage_offset(),
    }


ALIGNMENT = 16  # bytes: a vectorized kernel's widest load; a start off it picks another kernel


def _plain(tensor: torch.Tensor, fmt: torch.memory_format) -> bool:
    """Laid out as the shape implies: contiguous (a 1-D bias), or in the memory format, and
    starting on a 16-byte boundary (a slice whose offset misaligns it, `x[1:]` of rows of 6
    fp32, runs other kernels: its offset is kept; an aligned offset changes nothing)."""
    if tensor.storage_offset() * tensor.element_size() % ALIGNMENT:
        return False
    if tensor.dim() in (4, 5) and fmt is not torch.contiguous_format:
        return tensor.is_contiguous(memory_format=fmt)
    return tensor.is_contiguous()


def _lay_out(
    shape: CallShape,
    named: dict[str, tuple[torch.Tensor | None, tuple[int, ...]]],
    fmt: torch.memory_format = torch.contiguous_format,
) -> None:
    """Add `layout` to a typed shape: each input (name -> tensor, the shape's dims for it)
    that is no plain tensor, with its strides, storage offset and, when its dims are not the
    shape's (a linear's (batch, tokens, K) input), its dims; nothing when all are plain, so
    the shapes of a contiguous program read as before."""
    layout: CallShape = {}
    for name, (tensor, dims) in named.items():
        if tensor is None or _plain(tensor, fmt):
            continue
        given = {"strides": list(tensor.stride()), "offset": tensor.storage_offset()}
        layout[name] = (
            given if tuple(tensor.shape) == dims else {"shape": list(tensor.shape), **given}
        )
    if layout:
        shape["layout"] = layout


def _cast(func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any) -> Any:
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
    shape: CallShape = {
        "op": "cast",
        "shape": list(x.shape),
        "from": DTYPE_NAMES[x.dtype],
        "to": CAST_TARGETS[result.dtype],
    }
    _lay_out(shape, {"x": (x, tuple(x.shape))})
    return shape, [x]
