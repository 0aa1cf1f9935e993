"""The attention shape: scaled dot-product attention by backend, its dims, and what the program
passed beside its tensors (a mask, dropout, a scale, grouped-query attention), so that the
replay's backend and kernels are the program's."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .layouts import AttentionMask, layout_tags
from .ops import DTYPE_BYTES, Dtype, InputSpec, PositiveInt, TypedShape

# `sdpa`: F.scaled_dot_product_attention left to pick its kernel, as a recorded model did.
AttentionBackend = Literal[
    "sdpa",
    "sdpa_flash",
    "sdpa_efficient",
    "sdpa_cudnn",
    "flash_attn",
    "flash_attn_interface",
    "fa3_fwd",
]


class AttentionShape(TypedShape):
    """Scaled dot-product attention; keys beyond `valid_keys` are allocated but not attended.
    `mask`, `dropout_p`, `scale` and `enable_gqa` are SDPA's arguments as the program passed
    them (absent: unmasked, no dropout, 1/sqrt(head_dim), not given); only the `sdpa*`
    backends take a mask, dropout or a scale."""

    op: Literal["attention"]
    # One backend, or a preference list: the first one that runs here is used (and recorded).
    backend: AttentionBackend | Annotated[list[AttentionBackend], Field(min_length=1)] = (
        "sdpa_cudnn"
    )
    substitutes_for: str | None = None  # the op the legacy pipeline ran, e.g. flash_attn_v3
    batch: PositiveInt = 1
    heads: PositiveInt
    head_dim: PositiveInt
    q_len: PositiveInt
    valid_keys: PositiveInt
    allocated_keys: PositiveInt | None = None
    role: Literal["self", "cross"] = "self"
    causal: bool = False
    dtype: Dtype = "bf16"
    mask: AttentionMask | None = None
    dropout_p: Annotated[float, Field(ge=0.0, lt=1.0)] | None = None
    scale: Annotated[float, Field(allow_inf_nan=False)] | None = None
    enable_gqa: bool | None = None
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ("query", "key", "value")

    @field_validator("dropout_p", "enable_gqa")
    @classmethod
    def _default_is_absent(cls, value: float | bool | None) -> float | bool | None:
        """Dropout 0 and enable_gqa false are SDPA's defaults: written out by hand they mean
        what absent means, so they keep the id (and the replay) of the shape without them."""
        return value or None

    @model_validator(mode="after")
    def _keys(self) -> AttentionShape:
        if self.allocated_keys is not None and self.allocated_keys < self.valid_keys:
            raise ValueError(f"allocated_keys {self.allocated_keys} < valid_keys {self.valid_keys}")
        if self.mask is not None:
            full = [self.batch, self.heads, self.q_len, self.valid_keys]
            given = self.mask.shape
            if any(g not in (1, f) for g, f in zip(reversed(given), reversed(full), strict=False)):
                raise ValueError(f"mask {given} does not broadcast to {full}")
            if self.mask.dtype not in ("bool", "fp32", self.dtype):  # SDPA refuses it
                raise ValueError(f"an {self.mask.dtype} mask on {self.dtype} attention")
        return self

    def key(self) -> str:
        keys = f"k{self.valid_keys}"
        if self.allocated_keys and self.allocated_keys != self.valid_keys:
            keys += f"of{self.allocated_keys}"
        body = f"{self.role}_b{self.batch}_h{self.heads}_d{self.head_dim}_q{self.q_len}_{keys}"
        tags = [self.dtype] + (["causal"] if self.causal else []) + self.extra_tags()
        return f"{self.substitutes_for or '+'.join(self.backends())}:{body}:" + ":".join(tags)

    def extra_tags(self) -> list[str]:
        """`strided`, `mask-<dtype>`, `dropout`, `scale`, `gqa` as given, and a digest of
        them all; none for a plain unmasked shape (its id stays as it was)."""
        layout = {k: v.model_dump(exclude_none=True) for k, v in (self.layout or {}).items()}
        mask = self.mask.model_dump(exclude_none=True) if self.mask else None
        readable = ["strided"] if layout else []
        readable += [f"mask-{self.mask.dtype}"] if self.mask else []
        readable += ["dropout"] if self.dropout_p is not None else []
        readable += ["scale"] if self.scale is not None else []
        readable += ["gqa"] if self.enable_gqa is not None else []
        extras = {"layout": layout or None, "mask": mask, "dropout_p": self.dropout_p,
                  "scale": self.scale, "enable_gqa": self.enable_gqa}  # fmt: skip
        return layout_tags(extras, readable)

    def backends(self) -> list[str]:
        """Backends to try, in order."""
        return list(self.backend) if isinstance(self.backend, list) else [self.backend]

    def aten_op(self) -> str:
        return self.substitutes_for or "+".join(self.backends())

    def nominal_flops(self) -> int:
        # QK^T and PV: 2 GEMMs of 2*q*k*d FLOPs per head; causal attends about half the pairs.
        full = 4 * self.batch * self.heads * self.q_len * self.valid_keys * self.head_dim
        return full // 2 if self.causal else full

    def nominal_bytes(self) -> int:
        q_and_out = 2 * self.batch * self.heads * self.q_len * self.head_dim
        k_and_v = 2 * self.batch * self.heads * self.valid_keys * self.head_dim
        mask = self.mask.distinct_bytes() if self.mask else 0
        return (q_and_out + k_and_v) * DTYPE_BYTES[self.dtype] + mask

    def plain_inputs(self) -> list[InputSpec]:
        keys = self.allocated_keys or self.valid_keys  # the padded buffer is drawn whole
        q = (self.batch, self.heads, self.q_len, self.head_dim)
        kv = (self.batch, self.heads, keys, self.head_dim)
        return [(q, self.dtype, 1.0), (kv, self.dtype, 1.0), (kv, self.dtype, 1.0)]

    def output_bytes(self) -> int:
        rows = self.batch * self.heads * self.q_len
        mask = self.mask.span() * DTYPE_BYTES.get(self.mask.dtype, 1) if self.mask else 0
        return rows * self.head_dim * DTYPE_BYTES[self.dtype] + rows * 4 + mask  # out + lse
