"""Replay shapes on the GPU, each once inside its own NVTX range; run by capture under ncu.

Torch, as in inputs and aten (replay/ and record/ alone import it). For each shape it builds
inputs from a fixed seed (replay.inputs: on the GPU, the same bytes on any machine; laid out
as the program's, with attention's mask, by replay.layouts), warms the op up outside any NVTX
range (cuDNN/cuBLAS heuristics and autotuning land there and are not profiled), then runs it
once inside the range named by the shape's group id.
One JSON line per shape goes to the status file, flushed at once, so that a crash loses nothing
already replayed.

    python -m ncu_classify.replay BATCH.json STATUS.jsonl
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..read.names import REPEAT_RANGE
from ..shapes.aten import AtenShape
from ..shapes.attention import AttentionShape
from ..shapes.chain_shape import ChainShape
from ..shapes.file import ShapeEntry
from ..shapes.ops import CastShape, Conv2dShape, Conv3dShape, LinearShape
from .aten import NotReplayable, Storages, prepare
from .chain import Mode, chain_runner, own_code, replay_mode
from .inputs import DTYPES, InputSource, Unsupported, start_draws
from .layouts import attention_mask, placed
from .outputs import write_sample
from .protocol import BatchFile, read_batch, serve_batch

# Attention backends that are Python packages: the module that has `flash_attn_func`.
# fa3_fwd is the `fa3-fwd` wheel: FlashAttention-3's forward kernels, built for Hopper.
BACKEND_MODULES = {
    "flash_attn": "flash_attn",
    "flash_attn_interface": "flash_attn_interface",
    "fa3_fwd": "fa3_fwd_interface",
}
Op = Callable[[], Any]


def _linear(s: LinearShape, draw: InputSource) -> tuple[list[torch.Tensor], Op]:
    cpu, (x, w, *b) = placed(s, draw)
    torch.backends.cuda.matmul.allow_tf32 = s.allow_tf32
    return cpu, lambda: F.linear(x, w, b[0] if b else None)


def _conv3d(s: Conv3dShape, draw: InputSource) -> tuple[list[torch.Tensor], Op]:
    fmt = (
        torch.channels_last_3d if s.memory_format == "channels_last_3d" else torch.contiguous_format
    )
    cpu, (x, w, *b) = placed(
        s, draw, lambda t: t.contiguous(memory_format=fmt) if t.dim() == 5 else t
    )
    torch.backends.cudnn.allow_tf32 = s.allow_tf32
    return cpu, lambda: F.conv3d(
        x, w, b[0] if b else None, s.stride, s.padding, s.dilation, s.groups
    )


def _attention(s: AttentionShape, draw: InputSource) -> tuple[list[torch.Tensor], Op]:
    cpu, (q, k, v) = placed(s, draw)
    k, v = k[:, :, : s.valid_keys], v[:, :, : s.valid_keys]  # padded buffer, valid prefix
    mask = attention_mask(s.mask, q.device) if s.mask is not None else None
    problems = []
    for backend in s.backends():
        try:
            op = _attention_op(backend, s, q, k, v, mask)
            op()  # a backend that cannot run this shape fails here, before the warm-up
        except (Unsupported, RuntimeError) as exc:
            problems.append(f"{backend}: {str(exc).splitlines()[0]}")
            continue
        _chosen[0] = backend
        return cpu, op
    raise Unsupported("; ".join(problems))


_chosen: list[str | None] = [None]  # attention backend that ran the current shape


def _attention_op(
    backend: str,
    s: AttentionShape,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
) -> Op:
    sdpa_only = [
        n for n in ("mask", "dropout_p", "scale", "enable_gqa") if getattr(s, n) is not None
    ]
    if backend.startswith("sdpa"):
        return _sdpa(backend, s, q, k, v, mask)
    if sdpa_only:
        raise Unsupported(f"{backend} takes no {', '.join(sdpa_only)} here (the sdpa backends do)")
    module = _import_backend(BACKEND_MODULES[backend])
    # flash_attn takes (batch, seq, heads, dim); transpose views keep the padded key buffer.
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    qt = qt.contiguous()
    return lambda: module.flash_attn_func(qt, kt, vt, causal=s.causal)


def _conv2d(s: Conv2dShape, draw: InputSource) -> tuple[list[torch.Tensor], Op]:
    fmt = torch.channels_last if s.memory_format == "channels_last" else torch.contiguous_format
    cpu, (x, w, *b) = placed(
        s, draw, lambda t: t.contiguous(memory_format=fmt) if t.dim() == 4 else t
    )
    torch.backends.cudnn.allow_tf32 = s.allow_tf32
    return cpu, lambda: F.conv2d(
        x, w, b[0] if b else None, s.stride, s.padding, s.dilation, s.groups
    )


def _sdpa(
    name: str,
    s: AttentionShape,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
) -> Op:
    """SDPA by backend with the program's arguments: its mask, dropout, scale and GQA flag
    where the shape records them (only those: an unmasked shape's call is as before)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    attend = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=s.causal)
    if mask is not None:  # only the arguments the shape records: else the call is as before
        attend = functools.partial(attend, attn_mask=mask)
    if s.dropout_p is not None:
        attend = functools.partial(attend, dropout_p=s.dropout_p)
    if s.scale is not None:
        attend = functools.partial(attend, scale=s.scale)
    if s.enable_gqa:
        attend = functools.partial(attend, enable_gqa=True)

    backend = {
        "sdpa_flash": SDPBackend.FLASH_ATTENTION,
        "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
        "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
    }.get(name)

    def run() -> Any:
        if backend is None:  # `sdpa`: PyTorch picks, as in the recorded model
            return attend()
        with sdpa_kernel(backend):
            return attend()

    return run


def _import_backend(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError as exc:
        raise Unsupported(f"backend {name} is not importable here: {exc}") from None


def _cast(s: CastShape, draw: InputSource) -> tuple[list[torch.Tensor], Op]:
    cpu, (x,) = placed(s, draw)
    return cpu, lambda: x.to(DTYPES[s.to])


BUILDERS: dict[type, Callable[[Any, InputSource], tuple[list[torch.Tensor], Op]]] = {
    LinearShape: _linear,
    Conv3dShape: _conv3d,
    Conv2dShape: _conv2d,
    AttentionShape: _attention,
    CastShape: _cast,
}


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """Push/pop range `name`, synchronising on both sides so that no other work falls in."""
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


# The drawn storages of recorded device ops, shared across shapes. Kept small: ncu saves and
# restores the memory a process holds around every profiled kernel (about 4 ms per GB).
_STORAGES = Storages(budget=2 << 30)
DRAW_DEVICE = "cuda"  # where seeded inputs are drawn (tests on a CPU set "cpu")


def replay_one(entry: ShapeEntry, batch: BatchFile) -> dict[str, Any]:
    """Build inputs (seeded, or the recorded ones), warm up outside any range, run inside the
    shape's range: once, or (--repeat) each launch in a nested `repeat#N` range. An op that
    writes its arguments has them restored before each run."""
    _chosen[0] = None
    torch.cuda.empty_cache()  # the previous shape's blocks: less memory for ncu to save
    started = time.perf_counter()
    reset: Callable[[], None] | None = None
    sha: str | None
    compiled = entry.shape.compile
    if isinstance(entry.shape, AtenShape):
        if entry.shape.inputs_file:
            raise Unsupported("recorded inputs are not kept for device ops (aten shapes)")
        prepared = prepare(entry.shape, batch.seed, "cuda", _STORAGES)
        op, reset, sha = prepared.run, prepared.reset, prepared.input_sha256
    elif isinstance(entry.shape, ChainShape):  # compiled whole by its runner, or an error
        mode: Mode = "compile" if compiled else "eager"
        if entry.shape.allow_tf32 is not None:  # a pad fold's conv: as the program ran it
            torch.backends.cudnn.allow_tf32 = entry.shape.allow_tf32
        chain = chain_runner(
            entry.shape.chain, mode, "cuda", batch.seed, _STORAGES, replay_mode(entry.shape)
        )
        op, reset, sha, compiled = chain.run, chain.reset, chain.input_sha256, None
    else:
        draws = start_draws(entry, batch, DRAW_DEVICE)
        cpu, op = BUILDERS[type(entry.shape)](entry.shape, draws)
        sha = draws.finish(cpu)
        del cpu
    if compiled:  # compiled in the first warm-up, outside every range; static, on its own
        op = torch.compile(own_code(op), mode=compiled, dynamic=False)
    torch.cuda.synchronize()
    built = time.perf_counter()
    for _ in range(batch.warmup):
        if reset:
            reset()
        result = op()
    torch.cuda.synchronize()
    if batch.outputs_dir:
        write_sample(Path(batch.outputs_dir), entry.group, result)
    del result
    warm = time.perf_counter()
    numbers = batch.repeat_numbers()
    launches: list[int | None] = list(numbers) if numbers else [None]
    for number in launches:
        if reset:  # outside the range: its copies are not the op's
            reset()
        with nvtx_range(entry.group):
            _launch(op, number)
    done = time.perf_counter()
    phases = {"inputs": built - started, "warmup": warm - built, "measured": done - warm}
    fields: dict[str, Any] = {
        "input_sha256": sha,
        "backend_used": _chosen[0],
        "phases": {name: round(value, 4) for name, value in phases.items()},
    }
    if numbers:
        fields["launches"] = len(numbers)
    return fields


def _launch(op: Op, number: int | None) -> None:
    """One measured launch, inside its `repeat#N` range when it is one of several."""
    if number is None:
        op()
        return
    torch.cuda.nvtx.range_push(f"{REPEAT_RANGE}{number}")
    try:
        op()
    finally:
        torch.cuda.nvtx.range_pop()


def environment() -> dict[str, Any]:
    """Facts about this process's GPU and libraries, for the manifest."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "gpu_name": props.name,
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "memory_bytes": props.total_memory,
        "compute_capability": f"{props.major}.{props.minor}",
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def describe_failure(exc: Exception) -> str:
    """One line for a shape that failed; after an OOM the allocator's cache is given back so
    that the next shape gets the whole GPU."""
    if isinstance(exc, (Unsupported, NotReplayable)):
        return f"unsupported: {exc}"
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        torch.cuda.empty_cache()
        return f"out of memory: {str(exc).splitlines()[0]}"
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def replay_batch(batch_path: Path, status_path: Path) -> int:
    """Replay a batch file under the shared protocol, with cuDNN benchmark mode as it asks."""
    torch.backends.cudnn.benchmark = read_batch(batch_path).cudnn_benchmark
    return serve_batch(batch_path, status_path, replay_one, environment, describe_failure)
