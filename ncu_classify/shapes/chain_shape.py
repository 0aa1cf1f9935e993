"""A chain of device ops as a shape capture replays (`try`'s fusion move): the chain a recording
found (`shapes.chains`), run as one function, eagerly (as the program runs it: one kernel per
op) or under `torch.compile` (Inductor fuses it), inside one NVTX range, so that its card sums
every kernel the chain launched. Its nominal work is the fused chain's compulsory traffic:
every input read once, every output that leaves written once. `allow_tf32`, when given, is
cuDNN's TF32 setting the chain runs under (a pad fold's conv, as the program ran it)."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import Field

from .aten import ITEMSIZE, TensorSpec
from .chains import Chain
from .ops import InputSpec, OpShape, ShapeFields


class ChainShape(OpShape):
    """`chain`: one recorded chain; `compile: default` runs it fused."""

    op: Literal["chain"]
    chain: Chain
    allow_tf32: bool | None = None

    def key(self) -> str:
        digest = hashlib.sha256(self.chain.model_dump_json().encode()).hexdigest()[:12]
        tf32 = {None: "", True: ":tf32", False: ":no_tf32"}[self.allow_tf32]
        return f"chain:{len(self.chain.ops)}ops:{digest}{tf32}"

    def aten_op(self) -> str:
        return "chain"

    def nominal_flops(self) -> int:
        return 0

    def tensors(self) -> list[TensorSpec]:
        """Every tensor the chain reads or makes: its inputs, then each op's outputs."""
        return [i.tensor for i in self.chain.inputs] + [
            t for op in self.chain.ops for t in op.outputs
        ]

    def _leaving(self) -> list[TensorSpec]:
        """The outputs that leave the chain, as their ops recorded them."""
        return [self.chain.ops[op].outputs[out] for op, out in (o.ref for o in self.chain.outputs)]

    def nominal_bytes(self) -> int:
        read = sum(i.tensor.distinct_bytes() for i in self.chain.inputs)
        return read + sum(t.distinct_bytes() for t in self._leaving())

    def inputs(self) -> list[InputSpec]:
        return [((i.tensor.span(),), i.tensor.dtype, 1.0) for i in self.chain.inputs]

    def output_bytes(self) -> int:
        outputs = [t for op in self.chain.ops for t in op.outputs]
        return sum(t.span() * ITEMSIZE[t.dtype] for t in outputs)

    def device_bytes(self) -> int:
        """Every input drawn, twice (an op that writes one works on a copy), every output."""
        drawn = sum(i.tensor.span() * ITEMSIZE[i.tensor.dtype] for i in self.chain.inputs)
        return 2 * drawn + self.output_bytes()


class CompiledShape(ChainShape):
    """`compiled`: one graph of a torch.compile'd region of the program, as dynamo handed it to
    the backend, traced to ATen ops (`chain`); capture compiles it again (`compile`: Inductor's
    default, when the program's backend was Inductor; none: run eagerly). `region` names the
    module or function, `graph` its graph (after a graph break or a recompile there are more),
    `compile_id` dynamo's (frame/recompile), `mode` the program's compile mode, `kernels` those
    the program's run launched for it (names as they launched, on a GPU); `sizes` (from 1) a
    dynamic graph's calls at other layouts than its first (each one a shape: their chains)."""

    op: Literal["compiled"]  # type: ignore[assignment]
    region: str
    graph: int = Field(ge=0)
    backend: str
    compile_id: str | None = None
    mode: str | None = None
    options: dict[str, str | int | float | bool] | None = None  # the program's Inductor options
    kernels: list[str] = Field(default_factory=list)
    sizes: int | None = Field(default=None, ge=1)  # a dynamic graph's call at other sizes

    def key(self) -> str:
        sizes = f":s{self.sizes}" if self.sizes else ""
        return f"compiled:{self.region or 'function'}:g{self.graph}{sizes}"

    def written(self) -> ShapeFields:
        """As a shape is written, its region's facts before the (long) chain of its ops."""
        fields = super().written()
        tail = {type(self).model_fields[n].alias or n for n in self.WRITE_TAIL}
        order = [k for k in fields if k != "chain" and k not in tail] + ["chain"]
        return {k: fields[k] for k in [*order, *(k for k in fields if k in tail)] if k in fields}

    def aten_op(self) -> str:
        return "compiled"
