"""Measures, on real CPU profiles of diffusers models built from small configs (random weights),
how `record` describes the ops of a compiled region's eager code (issue 40): each ATen op the
program called (no other ATen op holds it) and, separately, each innermost op (none inside it)
is described from the profile as `region_ops` does (`OpEvent.of(event, node)`, the event tree)
and replayed on the CPU; the replay's output shape, dtype and strides are compared with the
program's, taken from a second run of the same forward under a dispatch mode (the ops it sees
are the profile's ops that have no CompositeImplicit kernel; a composite op's output is its
last such callee's). Prints one table per model.

    PYTHONPATH=. python reports/record/describe_profiled_ops.py [--table] [--bf16]
        [--channels-last] [--tensors] [model ...]

`--bf16`: the models and inputs in bfloat16; `--channels-last`: the VAEs' 5-d weights and
latents channels_last_3d; `--tensors`: describe with `numbers=False` (a check that the
comparison sees a 0-d float64 taken for a tensor); `assorted`: ops no model here calls.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from ncu_classify.record.device_ops import why_not_replayed
from ncu_classify.record.profiled_calls import Lost, OpEvent, described, typed
from ncu_classify.record.recorder import Recorder
from ncu_classify.record.region_ops import _outermost
from ncu_classify.record.timing import _config
from ncu_classify.replay.aten import Storages, prepare
from ncu_classify.shapes.aten import AtenShape

Layout = tuple[tuple[int, ...], str, tuple[int, ...]]


def _layout(value: Any) -> Layout | None:
    """The first tensor's shape, dtype and strides of an op's output."""
    if isinstance(value, torch.Tensor):
        return tuple(value.shape), str(value.dtype).removeprefix("torch."), value.stride()
    if isinstance(value, list | tuple):
        for v in value:
            found = _layout(v)
            if found is not None:
                return found
    return None


class Outputs(TorchDispatchMode):
    """Each op the program dispatches below the composite ones, with its output's layout."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, Layout | None]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []  # overload, arguments by name

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        self.seen.append(("aten::" + func._schema.name.split("::")[1], _layout(out)))
        self.calls.append((f"aten.{func._schema.name.split('::')[1]}.{func._overloadname}",
                           _named(func._schema, list(args), kwargs or {}, True)))  # fmt: skip
        return out


def _plain(value: Any, true: bool) -> Any:
    """An argument as comparable: a tensor as its layout, a dtype by name, a number as such."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype).removeprefix("torch."),
                tuple(value.stride()))  # fmt: skip
    if isinstance(value, dict) and "tensor" in value:
        spec = value["tensor"]
        return ("tensor", tuple(spec["shape"]), spec["dtype"], tuple(spec["strides"]))
    if isinstance(value, dict) and "number" in value:
        return "number"
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if true and isinstance(value, float | int) and not isinstance(value, bool):
        return value
    if isinstance(value, torch.dtype | torch.memory_format | torch.layout):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return None  # (the replay's own)
    if isinstance(value, list | tuple):
        return [_plain(v, true) for v in value]
    return value


def _named(schema: Any, args: list[Any], kwargs: dict[str, Any], true: bool) -> dict[str, Any]:
    """A call's arguments by their schema names, defaults filled in, made comparable."""
    found: dict[str, Any] = {}
    positional = [a for a in schema.arguments if not a.kwarg_only]
    for index, argument in enumerate(schema.arguments):
        if index < len(args) and argument in positional:
            value = args[index]
        elif argument.name in kwargs:
            value = kwargs[argument.name]
        else:
            value = argument.default_value if argument.has_default_value() else None
        found[argument.name] = _plain(value, true)
    return found


def _numbers_agree(said: Any, true: Any) -> bool:
    """Whether a described argument stands for the program's (a number for a number)."""
    if said == "number":
        return isinstance(true, float | int)
    if isinstance(said, list) and isinstance(true, list) and len(said) == len(true):
        return all(_numbers_agree(a, b) for a, b in zip(said, true, strict=True))
    return said == true or (isinstance(said, float | int) and isinstance(true, float | int)
                            and float(said) == float(true))  # fmt: skip


DTYPE = torch.bfloat16 if "--bf16" in sys.argv else torch.float32  # the models' and inputs'
LAST = torch.channels_last_3d if "--channels-last" in sys.argv else torch.contiguous_format
NUMBERS = "--tensors" not in sys.argv  # (`numbers=False`: a check that mismatches show)
OVERLOADS: dict[int, str] = {}  # correlation id -> the profiler's overload name


def _composite(node: Any) -> bool:
    """Whether a profiled op has a composite kernel (a dispatch mode sees its callees)."""
    overload = OVERLOADS.get(node.correlation_id, "")
    name = f"{node.name}.{overload}" if overload and overload != "default" else node.name
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
    except RuntimeError:  # (no overload named: any of them)
        packet = getattr(torch.ops.aten, node.name.removeprefix("aten::"))
        return any(
            torch._C._dispatch_has_kernel_for_dispatch_key(
                f"{node.name}.{o}" if o != "default" else node.name, "CompositeImplicitAutograd"
            )
            for o in packet.overloads()
        )


def _walk(roots: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """The tree's outermost ATen nodes, the innermost that may launch a kernel (none inside
    them may: views, allocations and queries launch none), and those a dispatch mode sees."""
    outer: list[Any] = []
    inner: list[Any] = []
    seen: list[Any] = []

    def aten(node: Any) -> bool:
        return node.name.startswith("aten::")

    def launching(node: Any) -> bool:
        return aten(node) and _launches(node.name, OVERLOADS.get(node.correlation_id, ""))

    def has_launching(node: Any) -> bool:
        return any(launching(c) or has_launching(c) for c in node.children)

    def down(node: Any, inside: bool, mode: bool) -> None:
        if aten(node):
            if not inside:
                outer.append(node)
            if launching(node) and not has_launching(node):
                inner.append(node)
            if mode and not _composite(node):
                seen.append(node)
                mode = False
        for child in sorted(node.children, key=lambda c: c.start_time_ns):
            down(child, inside or aten(node), mode)

    for root in sorted(roots, key=lambda r: r.start_time_ns):
        down(root, False, True)
    return outer, inner, seen


def _truths(
    seen: list[Any], outputs: list[tuple[str, Layout | None]], calls: list[Any], got: dict[int, Any]
) -> dict[int, Layout]:
    """The program's output layout per node the dispatch mode saw (by id), aligned by name;
    `got` gains its call (overload, arguments) by node."""
    matcher = difflib.SequenceMatcher(
        None, [n.name for n in seen], [name for name, _ in outputs], autojunk=False
    )
    found: dict[int, Layout] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            layout = outputs[block.b + k][1]
            got[id(seen[block.a + k])] = calls[block.b + k]
            if layout is not None:
                found[id(seen[block.a + k])] = layout
    return found


def _truth(node: Any, truths: dict[int, Layout]) -> Layout | None:
    """A node's output: its own where the mode saw it, else its last seen callee's."""
    if id(node) in truths:
        return truths[id(node)]
    for child in sorted(node.children, key=lambda c: c.start_time_ns, reverse=True):
        found = _truth(child, truths)
        if found is not None:
            return found
    return None


def measure(name: str, forward: Callable[[], Any]) -> dict[str, Any]:
    """The counts for one model's forward."""
    with torch.no_grad():
        forward()  # (warm: lazy inits out of the profile)
        with profile(
            activities=[ProfilerActivity.CPU], record_shapes=True, experimental_config=_config()
        ) as prof:
            forward()
        mode = Outputs()
        with mode:
            forward()
        recorder = Recorder()  # (the typed shapes the recorder writes for it eagerly)
        with recorder:
            forward()
    eager = {json.dumps(e.shape, sort_keys=True) for e in recorder.recording.entries.values()}
    made: set[str] = set()
    results = prof.profiler.kineto_results
    events = {e.correlation_id(): e for e in results.events() if e.name().startswith("aten::")}
    OVERLOADS.update({k: getattr(e, "overload_name", lambda: "")() for k, e in events.items()})
    outer, inner, seen = _walk(list(results.experimental_event_tree()))
    true_calls: dict[int, Any] = {}
    truths = _truths(seen, mode.seen, mode.calls, true_calls)
    aligned = len(truths)
    storages = Storages()
    replays: dict[str, Any] = {}
    report: dict[str, Any] = {"model": name, "torch": torch.__version__, "aligned": aligned,
                              "seen": len(seen), "mode_ops": len(mode.seen)}  # fmt: skip
    leaves = inner
    chosen, unchosen = _chosen(leaves, events)
    report["chosen_lost"] = unchosen
    for label, nodes in (("called", outer), ("innermost", leaves), ("chosen", chosen)):
        counts: dict[str, Any] = {
            "ops": len(nodes), "described": 0, "data-dependent": 0, "lost": Counter(), "matched": 0,
            "mismatch": Counter(), "error": Counter(), "untold": Counter(), "examples": {},
            "wrong overload": Counter(), "wrong argument": Counter(), "overloads": Counter(),
        }  # fmt: skip
        for node in nodes:
            event = events.get(node.correlation_id)
            try:
                call = described(OpEvent.of(event, node), "float32", numbers=NUMBERS)
            except Lost as exc:
                counts["lost"][_reason(node.name, str(exc))] += 1
                continue
            counts["described"] += 1
            if label == "chosen":
                counts["overloads"][call.overload] += 1
            try:
                shape = typed(call)
                if label == "chosen" and shape is not None:
                    made.add(json.dumps(shape, sort_keys=True))
            except Exception as exc:  # (counted, by kind)
                counts["error"][f"typed {call.overload}: {type(exc).__name__}"] += 1
            if why_not_replayed(call.overload, call.args) is not None:
                counts["data-dependent"] += 1  # (record takes no such op)
                continue
            key = json.dumps([call.overload, call.args, call.kwargs], sort_keys=True)
            if key not in replays:
                replays[key] = _replay(call, storages)
            got = replays[key]
            if isinstance(got, str):
                counts["error"][f"{call.overload}: {got}"] += 1
                continue
            if id(node) in true_calls:
                overload, true = true_calls[id(node)]
                if overload != call.overload:
                    counts["wrong overload"][f"{call.overload} for {overload}"] += 1
                else:
                    schema = _schema(call.overload)
                    said = _named(schema, call.args, call.kwargs, False)
                    for arg, value in said.items():
                        if not _numbers_agree(value, true[arg]):
                            counts["wrong argument"][f"{call.overload} {arg}"] += 1
                            counts["examples"].setdefault(
                                f"{call.overload} {arg}", f"{value} for {true[arg]}"
                            )
            want = _truth(node, truths)
            if want is None:
                counts["untold"][node.name] += 1
            elif want == got:
                counts["matched"] += 1
            else:
                counts["mismatch"][call.overload] += 1
                counts["examples"].setdefault(call.overload, f"{key[:300]} -> {got} != {want}")
        report[label] = counts
    typed_ops = ("linear", "conv2d", "conv3d", "attention", "cast")
    eager = {s for s in eager if json.loads(s)["op"] in typed_ops}
    differing = Counter(_differing(s, eager) for s in made - eager)
    report["typed"] = {"eager": len(eager), "profiled": len(made), "differing": differing}
    return report


def _differing(made: str, eager: set[str]) -> str:
    """What a profiled typed shape the recorder did not write differs in from the nearest
    one it wrote (the same op and sizes): `attention layout` where only layouts differ."""
    shape = json.loads(made)
    for other in map(json.loads, eager):
        keys = {k for k in shape.keys() | other.keys() if shape.get(k) != other.get(k)}
        if other["op"] == shape["op"] and keys <= {"layout", "offset"}:
            return f"{shape['op']} {'/'.join(sorted(keys))}"
    return f"{shape['op']} (none alike)"


def _schema(overload: str) -> Any:
    """The schema of `aten.mul.Tensor`."""
    _, base, name = overload.split(".", 2)
    return getattr(getattr(torch.ops.aten, base), name)._schema


def _chosen(leaves: list[Any], events: dict[int, Any]) -> tuple[list[Any], Counter[str]]:
    """The ops `region_ops` makes shapes of: per kernel-launching op, the outermost op around
    it that the profile describes whole (distinct); and the innermost ops of those it cannot."""
    picked: dict[int, Any] = {}
    lost: Counter[str] = Counter()
    for leaf in leaves:
        chain, node = [], leaf
        while node is not None and node.name.startswith("aten::"):
            chain.append(node)
            node = node.parent
        ops = [OpEvent.of(events[n.correlation_id], n) for n in chain]
        found = _outermost(ops, list(range(len(chain))), "float32", NUMBERS)
        if found is None:
            lost[leaf.name] += 1
        else:
            picked.setdefault(id(chain[found[0]]), chain[found[0]])
    return list(picked.values()), lost


def _reason(name: str, message: str) -> str:
    """A Lost's reason without its sizes (one line per kind)."""
    return message if message.startswith(name) else f"{name}: {message.split(' of shape')[0]}"


NO_KERNEL = ("aten::empty", "aten::empty_strided", "aten::empty_like", "aten::resize_",
             "aten::_nnpack_available", "aten::lift_fresh", "aten::set_", "aten::detach_",
             "aten::result_type", "aten::as_strided_")  # fmt: skip


def _launches(name: str, overload: str) -> bool:
    """Whether an innermost op may launch a kernel: not a view, an allocation or a query."""
    if name in NO_KERNEL:
        return False
    packet = getattr(torch.ops.aten, name.removeprefix("aten::"), None)
    try:
        schema = getattr(packet, overload or "default")._schema
    except AttributeError:
        return True
    alias = schema.returns[0].alias_info if schema.returns else None
    return not (alias is not None and not alias.is_write)


def _replay(call: Any, storages: Storages) -> Layout | str:
    """The layout of the call's replay on the CPU, or why it failed."""
    shape = {"op": "aten", "overload": call.overload, "args": call.args, "kwargs": call.kwargs}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = prepare(AtenShape.model_validate(shape, strict=False), 0, "cpu", storages).run()
    except Exception as exc:  # (counted, by kind)
        return f"{type(exc).__name__}: {re.sub(r'[0-9]+', 'N', ' '.join(str(exc).split()))[:90]}"
    layout = _layout(out)
    return layout if layout is not None else "no tensor out"


def _formatted(model: torch.nn.Module) -> None:
    """The model's 5-d weights in LAST's memory format (`--channels-last`: channels_last_3d)."""
    for param in model.parameters():
        if param.dim() == 5:
            param.data = param.data.contiguous(memory_format=LAST)


def _models() -> dict[str, Callable[[], Callable[[], Any]]]:
    """Per model, what builds it (small config, random weights) and returns its forward."""
    import diffusers

    def hunyuan() -> Callable[[], Any]:
        model = diffusers.HunyuanVideoTransformer3DModel(
            in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=10,
            num_layers=2, num_single_layers=2, num_refiner_layers=1, patch_size=1,
            patch_size_t=1, guidance_embeds=True, text_embed_dim=16, pooled_projection_dim=8,
            rope_axes_dim=(2, 4, 4),
        ).eval().to(DTYPE)  # fmt: skip
        x, text = torch.randn(1, 4, 2, 8, 8, dtype=DTYPE), torch.randn(1, 12, 16, dtype=DTYPE)
        mask, pooled = torch.ones(1, 12), torch.randn(1, 8, dtype=DTYPE)
        mask[:, 9:] = 0
        step, guide = torch.tensor([3]), torch.tensor([3000.0])
        return lambda: model(x, step, text, mask, pooled, guide, return_dict=False)

    def cogvideox() -> Callable[[], Any]:
        model = diffusers.CogVideoXTransformer3DModel(
            num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4,
            time_embed_dim=8, text_embed_dim=16, num_layers=2, sample_width=8, sample_height=8,
            sample_frames=9, patch_size=2, temporal_compression_ratio=4, max_text_seq_length=8,
        ).eval().to(DTYPE)  # fmt: skip
        x, text = torch.randn(1, 3, 4, 8, 8, dtype=DTYPE), torch.randn(1, 8, 16, dtype=DTYPE)
        return lambda: model(x, text, torch.tensor([3]), return_dict=False)

    def ltx() -> Callable[[], Any]:
        vae = diffusers.AutoencoderKLLTXVideo(
            latent_channels=8, block_out_channels=(8, 8, 8, 8),
            decoder_block_out_channels=(8, 8, 8, 8), layers_per_block=(1, 1, 1, 1, 1),
            decoder_layers_per_block=(1, 1, 1, 1, 1), patch_size=1,
        ).eval().to(DTYPE)  # fmt: skip
        z = torch.randn(1, 8, 2, 4, 4, dtype=DTYPE).contiguous(memory_format=LAST)
        _formatted(vae)
        return lambda: vae.decode(z, return_dict=False)

    def cogvideox_vae() -> Callable[[], Any]:
        vae = diffusers.AutoencoderKLCogVideoX(
            block_out_channels=(8, 8, 8, 8), latent_channels=4, layers_per_block=1,
            norm_num_groups=4, sample_height=16, sample_width=16,
        ).eval().to(DTYPE)  # fmt: skip
        z = torch.randn(1, 4, 3, 4, 4, dtype=DTYPE).contiguous(memory_format=LAST)
        _formatted(vae)
        return lambda: vae.decode(z, return_dict=False)

    def mochi() -> Callable[[], Any]:
        model = diffusers.MochiTransformer3DModel(
            patch_size=2, num_attention_heads=2, attention_head_dim=8, num_layers=2,
            pooled_projection_dim=16, in_channels=4, text_embed_dim=16, time_embed_dim=4,
            max_sequence_length=16,
        ).eval().to(DTYPE)  # fmt: skip
        x, text = torch.randn(1, 4, 2, 8, 8, dtype=DTYPE), torch.randn(1, 16, 16, dtype=DTYPE)
        mask = torch.ones(1, 16, dtype=torch.bool)
        mask[:, 11:] = False
        return lambda: model(x, text, torch.tensor([3]), mask, return_dict=False)

    def wan() -> Callable[[], Any]:
        vae = diffusers.AutoencoderKLWan(
            base_dim=8, z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True],
            latents_mean=[0.0] * 4, latents_std=[1.0] * 4,
        ).eval().to(DTYPE)  # fmt: skip
        z = torch.randn(1, 4, 3, 4, 4, dtype=DTYPE).contiguous(memory_format=LAST)
        _formatted(vae)
        return lambda: vae.decode(z, return_dict=False)

    def assorted() -> Callable[[], Any]:
        x, xi = torch.randn(2, 3, 4, 5), torch.randint(0, 3, (2, 3))
        b = torch.randn(2, 3, 4, 5, dtype=torch.bfloat16)
        w1, w2, e = torch.randn(3, 2, 3, 3), torch.randn(3, 1, 3, 3), torch.randn(3, 4)
        zero, two = torch.zeros(2, 3, 4, 2, dtype=torch.long), torch.tensor(2.0)
        t0, t1 = torch.tensor(3, dtype=torch.int32), torch.tensor(0.5, dtype=torch.float16)
        ops = {
            "sum_dim": lambda: x.sum(dim=(1, 2), keepdim=True),
            "sum_dtype": lambda: b.sum(dtype=torch.float32),
            "mean_dim": lambda: x.mean(-1),
            "amax": lambda: x.amax(dim=[1]),
            "std": lambda: x.std(dim=1, correction=0),
            "var_mean": lambda: torch.var_mean(x, dim=[2, 3], keepdim=True)[0],
            "softmax_dtype": lambda: F.softmax(b, dim=-1, dtype=torch.float32),
            "interp_nearest": lambda: F.interpolate(x, scale_factor=2.0, mode="nearest"),
            "interp_size": lambda: F.interpolate(
                x, size=(8, 9), mode="bilinear", align_corners=False
            ),
            "interp_exact": lambda: F.interpolate(x, scale_factor=2.0, mode="nearest-exact"),
            "interp3d": lambda: F.interpolate(
                x[None], scale_factor=(1.0, 2.0, 2.0), mode="trilinear"
            ),
            "clamp_min": lambda: x.clamp(min=0.1),
            "clamp_t": lambda: x.clamp(min=torch.tensor(0.0)),
            "arange": lambda: torch.arange(0, 10, 2, dtype=torch.float32),
            "full": lambda: torch.full((3, 4), 2.5),
            "cumsum": lambda: xi.cumsum(1, dtype=torch.float32),
            "norm": lambda: torch.linalg.vector_norm(x, 2, dim=-1, keepdim=True),
            "rms_norm": lambda: F.rms_norm(x, (5,), eps=1e-6),
            "layer_norm": lambda: F.layer_norm(x, (5,), eps=1e-6),
            "repeat_interleave": lambda: x.repeat_interleave(2, dim=1),
            "where_scalar": lambda: torch.where(x > 0, x, 0.0),
            "pow": lambda: x.pow(2),
            "rsub": lambda: 1 - x,
            "div_int": lambda: xi / 2,
            "true_div_t": lambda: x / two,
            "mul_int_t": lambda: xi * 3,
            "to_bf16_copy": lambda: x.to(torch.bfloat16, memory_format=torch.channels_last),
            "type_as": lambda: x.type_as(b),
            "masked_fill": lambda: x.masked_fill(x > 0, float("-inf")),
            "chunk": lambda: x.chunk(2, dim=-1)[1],
            "split_sizes": lambda: x.split([2, 3], dim=-1)[1],
            "unflatten": lambda: x.unflatten(-1, (5, 1)),
            "expand": lambda: x[:, :1].expand(-1, 3, -1, -1).contiguous(),
            "baddbmm": lambda: torch.baddbmm(x[0][..., :4], x[0], x[0].mT, beta=0.5, alpha=2.0),
            "addcmul": lambda: torch.addcmul(x, x, x, value=0.3),
            "lerp": lambda: torch.lerp(x, x * 2, 0.3),
            "einsum": lambda: torch.einsum("bchw,bcwk->bchk", x, x.transpose(-1, -2)),
            "group_norm_bf16": lambda: F.group_norm(b, 3),
            "conv_transpose": lambda: F.conv_transpose2d(
                x, w1, stride=2, padding=1, output_padding=1
            ),
            "conv2d_groups": lambda: F.conv2d(x, w2, padding="same", groups=3),
            "avg_pool3d": lambda: F.avg_pool3d(x[None], (1, 2, 2)),
            "silu_inplace": lambda: F.silu(x.clone(), inplace=True),
            "zeros_like_bf16": lambda: torch.zeros_like(x, dtype=torch.bfloat16),
            "ones": lambda: torch.ones(2, 3, dtype=torch.int64),
            "stack": lambda: torch.stack([x, x], dim=1),
            "roll": lambda: torch.roll(x, shifts=1, dims=2),
            "flip": lambda: torch.flip(x, dims=[1]),
            "topk": lambda: torch.topk(x, 2, dim=-1)[0],
            "sort": lambda: torch.sort(x, dim=-1, descending=True)[0],
            "gather": lambda: torch.gather(x, -1, zero),
            "embedding": lambda: F.embedding(xi, e),
            "outer": lambda: torch.outer(x[0, 0, 0], x[0, 0, 0]),
            "polar": lambda: torch.polar(torch.ones(2, 3), torch.randn(2, 3)),
            "view_as_real": lambda: torch.view_as_real(
                torch.randn(2, 3, dtype=torch.complex64) * 2
            ),
            "tril": lambda: torch.tril(x, diagonal=-1),
            "sdpa_mask": lambda: F.scaled_dot_product_attention(
                x, x, x, attn_mask=x[0, 0, :, :4] > 0
            ),
            "sdpa_causal": lambda: F.scaled_dot_product_attention(
                x, x, x, is_causal=True, scale=0.3
            ),
            "bucketize": lambda: torch.bucketize(x, torch.tensor([0.0, 1.0])),
            "clamp_max_int": lambda: xi.clamp(max=1),
            "erf": lambda: torch.special.erf(x),
            "prod": lambda: x.prod(-1),
            "logsumexp": lambda: x.logsumexp(-1),
            "argmax": lambda: x.argmax(-1),
            "max_dim": lambda: x.max(dim=-1)[0],
            "min_other": lambda: torch.minimum(x, torch.zeros(())),
            "round_dec": lambda: x.round(decimals=2),
            "fmod": lambda: x.fmod(1.5),
            "remainder": lambda: xi.remainder(2),
            "floor_div": lambda: xi // 2,
            "zero_dim_int": lambda: t0 + 1,
            "zero_dim_half": lambda: t1 * 2,
            "zero_dim_int_div": lambda: t0 / 2,
        }
        return lambda: [f() for f in ops.values()]

    return {"hunyuan": hunyuan, "cogvideox": cogvideox, "mochi": mochi, "ltx_vae": ltx,
            "cogvideox_vae": cogvideox_vae, "wan_vae": wan, "assorted": assorted}  # fmt: skip


HEADER = (
    "| model | called: ops, described, lost | kernel ops: ops, described, lost "
    "| record's ops: ops, = program, differ, replay errors, untold | arguments differing "
    "| kernels' ops not described | typed: eager, profiled, differing |\n"
    "|---|---|---|---|---|---|---|"
)


def _told(counter: dict[str, int]) -> str:
    """`aten::pad mode (str) 45` from a counter's items, most first."""
    short = {k.replace(" argument ", " ").replace(" is not in the profile", ""): v
             for k, v in counter.items()}  # fmt: skip
    return ", ".join(f"{k} {v}" for k, v in sorted(short.items(), key=lambda i: (-i[1], i[0])))


def row(report: dict[str, Any]) -> str:
    """One model's line of the table."""
    called, inner, chosen = report["called"], report["innermost"], report["chosen"]
    differ = sum(chosen["mismatch"].values())
    errors = sum(chosen["error"].values())
    untold = sum(chosen["untold"].values())
    cells = [
        report["model"],
        f"{called['ops']}, {called['described']}, {sum(called['lost'].values())}"
        f" ({_told(called['lost']) or '-'})",
        f"{inner['ops']}, {inner['described']}, {sum(inner['lost'].values())}",
        f"{chosen['ops']}, {chosen['matched']}, {differ}"
        f"{' (' + _told(chosen['mismatch']) + ')' if differ else ''}, {errors}, {untold}",
        _told(chosen["wrong argument"]) or "-",
        _told(report["chosen_lost"]) or "-",
        f"{report['typed']['eager']}, {report['typed']['profiled']}, "
        f"{_told(report['typed']['differing']) or '0'}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(names: list[str], table: bool) -> None:
    """Print each model's counts (one JSON object a model), or (`--table`) a Markdown table."""
    torch.manual_seed(0)
    built = _models()
    if table:
        print(f"torch {torch.__version__}, {str(DTYPE).removeprefix('torch.')}\n\n{HEADER}")
    for name in names or list(built):
        report = measure(name, built[name]())
        line = row(report) if table else json.dumps(report, default=dict, sort_keys=True)
        print(line, flush=True)


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if not a.startswith("--")], "--table" in sys.argv)
