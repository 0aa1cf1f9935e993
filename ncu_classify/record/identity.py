"""How the dataflow knows a tensor again: by its storage (device and address, held by a weak
reference) and, for inputs of an origin by name (one input per tensor), by a number per live
tensor object. Python's `id()` alone is not one: a tensor made after another was freed may get
the freed one's id, and two temporaries (the constants two `m[i] = 1` lift) would be one input
or two as the allocator reused memory, so the same program recorded two different files."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef


class TensorNumbers:
    """Numbers from 1, the same while an object lives, a new one for a new object."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[Any], int]] = {}
        self._count = 0

    def __len__(self) -> int:
        return len(self._held)

    def of(self, tensor: Any) -> int:
        """The object's number, given on first sight."""
        known = self._held.get(id(tensor))
        if known is not None and known[0]() is tensor:
            return known[1]
        self._count += 1
        self._held[id(tensor)] = (weakref.ref(tensor), self._count)
        return self._count

    def forget_gone(self) -> None:
        """Drop the numbers of objects that are gone (a long program keeps making new ones)."""
        for key, (ref, _) in list(self._held.items()):
            if ref() is None:
                self._held.pop(key, None)


def weak_storage(storage: Any) -> StorageWeakRef:
    """A weak reference to a storage (it does not keep the memory)."""
    return StorageWeakRef(storage)  # type: ignore[no-untyped-call]


def expired(reference: StorageWeakRef) -> bool:
    """Whether the storage is gone (its memory may now hold another tensor)."""
    return bool(reference.expired())  # type: ignore[no-untyped-call]


def storage_key(tensor: torch.Tensor) -> tuple[torch.device, int] | None:
    """(device, address) of a tensor's storage; None for one without memory (meta, empty)."""
    try:
        pointer = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return (tensor.device, pointer) if pointer else None
