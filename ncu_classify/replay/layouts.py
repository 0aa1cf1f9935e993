"""A typed shape's inputs on the device as the program laid them out, and attention's mask.

An input the shape records a layout for (`shapes.layouts`) is drawn as its whole storage (as
long as the view reaches, offset included) by the shape's input source, as today's draws, then
viewed with the recorded dims, strides and storage offset (`as_strided`), so that the op meets
the strided view the program gave it and launches the same copy kernel first. Recorded inputs
(`record --save-inputs`, kept contiguous) are copied into such a view. A plain input is built
as before. Torch, as the rest of replay/.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..shapes.layouts import AttentionMask, InputLayout
from ..shapes.ops import TypedShape
from .inputs import DTYPES, InputSource, RecordedInputs

MASK_DTYPES = {"bool": torch.bool, **DTYPES}
Plain = Callable[[torch.Tensor], torch.Tensor]  # a plain input on the device, as the op takes it


def _as_is(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def placed(
    shape: TypedShape, draw: InputSource, plain: Plain = _as_is
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The shape's inputs: what its source handed out (hashed by the source's `finish`) and
    the tensors the op takes, on the device (`Tensor.cuda`), each in the program's layout where
    the shape records one, else made by `plain` (a conv's memory format)."""
    layouts = shape.layout or {}
    names = shape.input_names()
    dims = [d for d, _, _ in shape.plain_inputs()]
    if isinstance(draw, RecordedInputs):  # the program's values, kept contiguous
        given = draw.all(shape.plain_inputs())
        made = [
            _copied(t.cuda(), layouts[name], d) if name in layouts else plain(t.cuda())
            for name, t, d in zip(names, given, dims, strict=True)
        ]
        return given, made
    drawn = draw.all(shape.inputs())
    made = [
        _viewed(t.cuda(), layouts[name], d) if name in layouts else plain(t.cuda())
        for name, t, d in zip(names, drawn, dims, strict=True)
    ]
    return drawn, made


def _viewed(storage: torch.Tensor, layout: InputLayout, dims: tuple[int, ...]) -> torch.Tensor:
    """A drawn storage (1-D, as long as the view reaches) viewed as the program's tensor."""
    return storage.as_strided(layout.dims(dims), layout.strides, layout.offset)


def _copied(values: torch.Tensor, layout: InputLayout, dims: tuple[int, ...]) -> torch.Tensor:
    """Recorded values (contiguous, the shape's dims) written into a view of the program's
    layout over a fresh storage. A broadcast dimension (stride 0, an `expand`), whose elements
    share memory and cannot be written as a whole, is written once, from its first values."""
    storage = torch.zeros(layout.span(dims), dtype=values.dtype, device=values.device)
    view = _viewed(storage, layout, dims)
    once = tuple(slice(None) if s else slice(0, 1) for s in view.stride())
    view[once].copy_(values.reshape(view.shape)[once])
    return view


def attention_mask(mask: AttentionMask, device: torch.device | str) -> torch.Tensor:
    """The mask SDPA gets: the recorded dims, dtype, strides and storage offset, masking the
    keys from `mask.keys_attended()` on in every row (the trailing padding of a text encoder,
    as T5 pads its tokens; not random bits): True / 0.0 where a key is attended, False / the
    dtype's lowest finite value where it is masked (no row is wholly masked: no NaN). A
    dimension broadcast by stride 0 is written once; a mask broadcast over the keys attends
    every key."""
    dtype = MASK_DTYPES[mask.dtype]
    storage = torch.zeros(mask.span(), dtype=dtype, device=device)
    once = [n if s else 1 for n, s in zip(mask.shape, mask.strides, strict=True)]
    written = storage.as_strided(once, mask.strides, mask.offset)
    attended = torch.arange(once[-1], device=device) < mask.keys_attended()
    if dtype == torch.bool:
        values = attended
    else:
        lowest = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=device)
        values = torch.where(attended, torch.zeros((), dtype=dtype, device=device), lowest)
    written.copy_(values.expand(once))
    return storage.as_strided(mask.shape, mask.strides, mask.offset)
