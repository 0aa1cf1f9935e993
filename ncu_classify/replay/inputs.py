"""The inputs a replayed shape runs on: seeded draws, or the tensors `record --save-inputs` kept.

Seeded inputs come from one of two generators, named in the manifest (`input_draws`):

- `hashed_normal_v1` (new captures): each element is a pure function of (seed, the
  draw's position in the shape, the element's index): a 32-bit integer hash, four 16-bit
  uniforms summed (an Irwin-Hall approximation of a standard normal, within +-3.46), scaled.
  Every step is integer arithmetic or one correctly rounded float operation, so the bytes are
  the same on the CPU and on any GPU; drawn where the op runs, in chunks, at memory speed (a
  435 M-element input took 4.5-5.8 s on the CPU with torch's generator, no hash at all here).
  The sha256 names the recipe (generator, seed, shapes, dtypes, scales), which fixes the bytes.
- `torch_cpu_randn` (earlier captures, kept for their --resume): torch's CPU generator, the
  inputs hashed byte by byte; the previous shape's tensors are reused when drawn identically.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import torch

from ..shapes.ops import InputSpec

if TYPE_CHECKING:
    from ..shapes.file import ShapeEntry
    from .protocol import BatchFile

DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "uint8": torch.uint8,
}
MASK32 = 0xFFFFFFFF
CHUNK = 1 << 25  # elements hashed at a time: ~1.3 GB of int64 temporaries on the device
SQRT3 = math.sqrt(3.0)


class Unsupported(Exception):
    """The shape asks for something this host cannot run (a backend that is not installed)."""


class InputSource(Protocol):
    """What a shape's builder draws its inputs from."""

    def all(self, specs: list[InputSpec]) -> list[torch.Tensor]: ...

    def finish(self, tensors: list[torch.Tensor]) -> str | None: ...


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit avalanche hash on int64 values in [0, 2**32); both multipliers are below 2**31,
    so no product leaves int64 and the result is the same on every device."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & MASK32
    x = x ^ (x >> 15)
    x = (x * 0x5BD1E995) & MASK32
    return x ^ (x >> 16)


def stream_keys(seed: int, position: int) -> tuple[int, int, int]:
    """Three 32-bit keys for draw number `position` of a shape under `seed`."""
    digest = hashlib.sha256(f"hashed_normal_v1 {seed} {position}".encode()).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in (0, 4, 8))  # type: ignore[return-value]


def hashed_normal(count: int, keys: tuple[int, int, int], device: str) -> torch.Tensor:
    """`count` float32 values of mean 0 and variance 1, element i a function of (keys, i)."""
    out = torch.empty(count, dtype=torch.float32, device=device)
    for start in range(0, count, CHUNK):
        index = torch.arange(start, min(count, start + CHUNK), dtype=torch.int64, device=device)
        first = _mix(_mix((index & MASK32) ^ keys[0]) ^ (index >> 32) ^ keys[1])
        second = _mix(first ^ keys[2])
        total = (first & 0xFFFF) + (first >> 16) + (second & 0xFFFF) + (second >> 16)
        # sum of (2u + 1) / 2**17 over four uniforms u: exact in float32 (at most 19 bits)
        uniform_sum = (total * 2 + 4).to(torch.float32) * 2.0**-17
        out[start : start + index.numel()] = (uniform_sum - 2.0) * SQRT3
    return out


class HashedDraws:
    """Seeded draws of one shape on `device` (see the module docstring); no cache: a draw
    costs a few passes over the tensor at memory speed."""

    def __init__(self, seed: int, device: str) -> None:
        self.seed, self.device = seed, device
        self.specs: list[InputSpec] = []

    def __call__(self, shape: list[int], dtype: str, scale: float = 1.0) -> torch.Tensor:
        keys = stream_keys(self.seed, len(self.specs))
        self.specs.append((tuple(shape), dtype, scale))
        drawn = hashed_normal(math.prod(shape), keys, self.device).reshape(shape)
        if scale != 1.0:
            drawn = drawn * scale
        return drawn.to(DTYPES[dtype])

    def all(self, specs: list[InputSpec]) -> list[torch.Tensor]:
        """Draw every input of a shape, in order."""
        return [self(list(dims), dtype, scale) for dims, dtype, scale in specs]

    def finish(self, tensors: list[torch.Tensor]) -> str:
        """sha256 of the recipe, which fixes every byte of the inputs on any machine."""
        recipe = [f"hashed_normal_v1 seed={self.seed}"]
        recipe += [f"{list(dims)} {dtype} {scale!r}" for dims, dtype, scale in self.specs]
        return hashlib.sha256("\n".join(recipe).encode()).hexdigest()


class InputCache:
    """`torch_cpu_randn`: the previous shape's CPU inputs, by the draws that made them: the next
    shape reuses every tensor it would draw identically (the FA2 and FA3 variants of one
    attention shape draw the same 1.4 GB), which saves generating and hashing them again."""

    def __init__(self) -> None:
        self.tensors: dict[tuple[int, tuple[InputSpec, ...]], torch.Tensor] = {}
        self.shas: dict[tuple[int, tuple[InputSpec, ...]], str] = {}

    def start(self, seed: int, device: str = "cpu") -> Draws:
        return Draws(self, seed, device)


class Draws:
    """`torch_cpu_randn` draws for one shape: `draw(shape, dtype, scale)`, reproducible on any
    machine. On `cuda` (the duration-only repeats of such a capture) the same distributions are
    drawn on the GPU by its own generator: other values, no CPU time, no hash."""

    def __init__(self, cache: InputCache, seed: int, device: str = "cpu") -> None:
        self.cache, self.seed, self.device = cache, seed, device
        self.specs: list[InputSpec] = []
        self.made: dict[tuple[int, tuple[InputSpec, ...]], torch.Tensor] = {}
        self.gen: torch.Generator | None = None
        self.consumed = 0  # draws the generator has advanced past

    def __call__(self, shape: list[int], dtype: str, scale: float = 1.0) -> torch.Tensor:
        self.specs.append((tuple(shape), dtype, scale))
        key = (self.seed, tuple(self.specs))
        tensor = self.cache.tensors.get(key) if self.device == "cpu" else None
        if tensor is None:
            if self.gen is None or self.consumed != len(self.specs) - 1:
                self.gen = torch.Generator(self.device).manual_seed(self.seed)
                for earlier, _, _ in self.specs[:-1]:  # fast-forward past reused draws
                    torch.randn(earlier, generator=self.gen, device=self.device)
            drawn = torch.randn(shape, generator=self.gen, device=self.device)
            tensor = (drawn * scale).to(DTYPES[dtype])
            self.consumed = len(self.specs)
        self.made[key] = tensor
        return tensor

    def all(self, specs: list[InputSpec]) -> list[torch.Tensor]:
        """Draw every input of a shape, in order."""
        return [self(list(dims), dtype, scale) for dims, dtype, scale in specs]

    def finish(self, tensors: list[torch.Tensor]) -> str | None:
        """sha256 of this shape's inputs; keep them for the next shape (CPU draws only)."""
        if self.device != "cpu":
            return None
        key = (self.seed, tuple(self.specs))
        sha = self.cache.shas.get(key) or tensor_sha256(tensors)
        self.cache.tensors, self.cache.shas = self.made, {key: sha}
        return sha


_CACHE = InputCache()


class RecordedInputs:
    """The real inputs `record --save-inputs` kept for a shape, handed out in the order the
    shape's builder asks for them; they must have the shape's dims and dtypes."""

    def __init__(self, path: Path) -> None:
        try:
            tensors = torch.load(path, weights_only=True, map_location="cpu")
        except (OSError, RuntimeError, EOFError) as exc:
            raise Unsupported(f"recorded inputs {path} cannot be read: {exc}") from None
        if not isinstance(tensors, list) or not all(isinstance(t, torch.Tensor) for t in tensors):
            raise Unsupported(f"recorded inputs {path}: not a list of tensors")
        self.tensors, self.path = tensors, path

    def all(self, specs: list[InputSpec]) -> list[torch.Tensor]:
        got = [(tuple(t.shape), t.dtype) for t in self.tensors]
        want = [(tuple(dims), DTYPES[dtype]) for dims, dtype, _ in specs]
        if got != want:
            raise Unsupported(f"recorded inputs {self.path} are {got}, the shape needs {want}")
        return self.tensors

    def finish(self, tensors: list[torch.Tensor]) -> str:
        return tensor_sha256(tensors)


def tensor_sha256(tensors: list[torch.Tensor]) -> str:
    """sha256 over the CPU bytes of the inputs, in order, in their logical (contiguous) layout."""
    digest = hashlib.sha256()
    for t in tensors:
        digest.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def start_draws(entry: ShapeEntry, batch: BatchFile, device: str = "cuda") -> InputSource:
    """Where this shape's inputs come from: its recorded tensors, or the batch's generator
    (hashed draws on `device`; torch's CPU generator, or the GPU's for duration repeats)."""
    given = getattr(entry.shape, "inputs_file", None)
    if given:
        return RecordedInputs(Path(given))
    if batch.input_draws == "hashed_normal_v1":
        return HashedDraws(batch.seed, device)
    return _CACHE.start(batch.seed, "cuda" if batch.device_inputs else "cpu")
