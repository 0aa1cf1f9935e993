"""Our group ids read back into the shape they name, for reports read without their manifest.

A capture report moved out of its folder, or any report whose NVTX ranges are group ids
(`dit:linear:M4680_N5120_K5120:bf16:bias`), still names its shapes: the id is split into the
fields of the `shapes.ops` models, validated by those models, and accepted only when the
shape gives the very same id back through `shapes.file.group_id`. So `shapes.ops` stays the one
grammar (an id it would not write is not read), and the nominal FLOPs and bytes are the
capture's own (`capture.manifest.manifest_shape`).
"""

from __future__ import annotations

import re
from typing import get_args

from pydantic import ValidationError

from ..capture.manifest import ManifestShape, manifest_shape
from ..shapes.attention import AttentionBackend
from ..shapes.file import ShapeEntry, group_id

_STAGE = re.compile(r"[A-Za-z0-9_]+")
_KEYS = re.compile(r"k(\d+)(?:of(\d+))?")
_CONV_FIELDS = {"in": "input", "w": "weight", "s": "stride", "p": "padding", "d": "dilation"}
_LAYOUTS = {"cl3d": "channels_last_3d", "cl": "channels_last"}


def parse_group_id(text: str) -> ShapeEntry | None:
    """The shape entry whose group id is `text`, or None when `text` is not one of ours (a
    user's range name; a named shape `stage:name`, whose parameters the id does not hold)."""
    parts = text.split(":")
    if len(parts) < 4 or not _STAGE.fullmatch(parts[0]):
        return None
    stage, op, body, tags = parts[0], parts[1], parts[2], parts[3:]
    try:
        fields = _fields(op, body, tags)
        entry = ShapeEntry.model_validate({"stage": stage, "group": text, "shape": fields})
    except (ValueError, KeyError, IndexError, ValidationError):
        return None
    return entry if group_id(stage, entry.shape) == text else None


def manifest_shape_of_id(entry: ShapeEntry) -> ManifestShape:
    """What capture's manifest would hold for the shape (op, parameters, nominal FLOPs and
    bytes), without what the id does not tell: the backend list behind a substituted
    attention name (`flash_attn_v3`)."""
    record = manifest_shape(entry)
    if entry.shape.op == "attention" and entry.shape.substitutes_for:
        record.shape_parameters.pop("backend", None)
    return record


def _fields(op: str, body: str, tags: list[str]) -> dict[str, object]:
    """The shape model's fields spelt by one id's op, body and tags."""
    if op == "linear":
        dims = {name: int(value) for name, value in map(_token, body.split("_"))}
        return {"op": op, **dims, **_dtype_tags(tags, tf32_default=False), "bias": "bias" in tags}
    if op in ("conv2d", "conv3d"):
        return {"op": op, **_conv_body(body), **_conv_tags(tags)}
    if op == "cast":
        source, target = tags[0].split("-")
        return {"op": op, "shape": _ints(body), "from": source, "to": target}
    return {"op": "attention", **_attention_body(body), **_attention_backend(op), **_att_tags(tags)}


def _token(text: str) -> tuple[str, str]:
    """`M4680` -> ("M", "4680"); `in1x384x4` -> ("in", "1x384x4")."""
    match = re.fullmatch(r"([A-Za-z]+)(\d+(?:x\d+)*)", text)
    if not match:
        raise ValueError(text)
    return match.group(1), match.group(2)


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split("x")]


def _dtype_tags(tags: list[str], tf32_default: bool) -> dict[str, object]:
    """dtype, and allow_tf32 where the id says it (fp32 only; else the model's default)."""
    dtype = tags[0]
    fields: dict[str, object] = {"dtype": dtype}
    fields["allow_tf32"] = "tf32" in tags if dtype == "fp32" else tf32_default
    return fields


def _conv_body(body: str) -> dict[str, object]:
    fields: dict[str, object] = {}
    for prefix, value in map(_token, body.split("_")):
        if prefix == "g":
            fields["groups"] = int(value)
        else:
            fields[_CONV_FIELDS[prefix]] = _ints(value)
    return fields


def _conv_tags(tags: list[str]) -> dict[str, object]:
    layout = next((_LAYOUTS[t] for t in tags if t in _LAYOUTS), "contiguous")
    return {**_dtype_tags(tags, tf32_default=True), "memory_format": layout, "bias": "bias" in tags}


def _attention_body(body: str) -> dict[str, object]:
    """`self_b1_h40_d128_q4680_k4680of29640` -> role, batch, heads, head_dim, q_len, keys."""
    role, *tokens = body.split("_")
    names = {"b": "batch", "h": "heads", "d": "head_dim", "q": "q_len"}
    fields: dict[str, object] = {"role": role}
    for token in tokens[:-1]:
        prefix, value = _token(token)
        fields[names[prefix]] = int(value)
    keys = _KEYS.fullmatch(tokens[-1])
    if not keys:
        raise ValueError(tokens[-1])
    fields["valid_keys"] = int(keys.group(1))
    if keys.group(2):
        fields["allocated_keys"] = int(keys.group(2))
    return fields


def _attention_backend(name: str) -> dict[str, object]:
    """Backends joined by `+` (`sdpa_cudnn`), or the legacy op a shape substitutes for."""
    known = set(get_args(AttentionBackend))
    backends = name.split("+")
    if all(b in known for b in backends):
        return {"backend": backends[0] if len(backends) == 1 else backends}
    return {"substitutes_for": name}


def _att_tags(tags: list[str]) -> dict[str, object]:
    return {"dtype": tags[0], "causal": "causal" in tags[1:]}
