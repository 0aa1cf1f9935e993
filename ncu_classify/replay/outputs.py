"""A sample of a replayed op's output, written for `try`'s numerics: the same positions of the
same logical tensor whatever its layout (a channels-last or padded-stride output is read by
index, not by memory order), so that an alternative's output can be set against the original's
on a machine without torch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from .protocol import sample_stem

SAMPLE = 1 << 18  # elements kept of a larger output: 1 MiB of float32
SAMPLE_SEED = 20261204


def first_tensor(value: Any) -> torch.Tensor | None:
    """The op's output tensor: itself, or the first tensor of a tuple or list it returned."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = first_tensor(item)
            if found is not None:
                return found
    return None


def sample_positions(count: int) -> torch.Tensor:
    """The flat logical positions sampled from an output of `count` elements: all of them up
    to SAMPLE, else SAMPLE seeded positions (sorted), the same for every output of that size."""
    if count <= SAMPLE:
        return torch.arange(count)
    generator = torch.Generator().manual_seed(SAMPLE_SEED)
    return torch.randint(0, count, (SAMPLE,), generator=generator).sort().values


def output_sample(out: torch.Tensor) -> torch.Tensor:
    """The sampled elements of `out` in logical order, as float32 on the CPU."""
    positions = sample_positions(out.numel()).to(out.device)
    if out.dim() == 0:
        return out.detach().reshape(1).float().cpu()
    index = torch.unravel_index(positions, tuple(out.shape))
    return out.detach()[index].float().cpu()


def write_sample(folder: Path, group: str, result: Any) -> None:
    """Write `<stem>.f32` (the sample, little-endian float32) and `<stem>.json` (the output's
    shape, dtype and element count); nothing when the op returned no tensor."""
    out = first_tensor(result)
    if out is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    stem = sample_stem(group)
    sample = output_sample(out)
    (folder / f"{stem}.f32").write_bytes(sample.numpy().astype("<f4").tobytes())
    facts = {
        "group": group,
        "shape": list(out.shape),
        "dtype": str(out.dtype).removeprefix("torch."),
        "elements": out.numel(),
        "sampled": sample.numel(),
    }
    (folder / f"{stem}.json").write_text(json.dumps(facts) + "\n", encoding="utf-8")
