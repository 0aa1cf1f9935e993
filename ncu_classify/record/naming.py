"""The name a top module goes by (its stage's default): the name the code that runs it holds
it by, found in the calling frames: a child of the module whose method called it, an attribute
of a pipeline's `self`, a variable, an item of a list of like modules, or its path in a module
a variable holds; else its class."""

from __future__ import annotations

import dis
import functools
import inspect
import itertools
from collections.abc import Container, Iterator, Mapping
from typing import Any

import torch


def held_as(module: torch.nn.Module, depth: int = 0, taken: Container[str] = ()) -> str | None:
    """The name a top module goes by in the code that runs it: the child name in the module
    whose method called it (`vae.decode` runs `self.decoder`: `vae.decoder`), the attribute of a
    non-module `self` (a pipeline's `self.transformer`), or a local variable holding it. A name
    `taken` by another module (a helper's `model` argument, given the DiT then the VAE) is
    passed over for one further out (`vae`)."""
    frames = []
    frame = inspect.currentframe()
    try:
        while frame is not None and depth < 8:
            code = frame.f_code.co_filename.replace("\\", "/")
            if "torch/nn/modules" not in code and "ncu_classify/record/" not in code:
                frames.append(frame)
            frame = frame.f_back
        loops = [_loop_variables(f.f_code) for f in frames]
        for number, here in enumerate(frames):
            # (a closure's free variable that a frame further out loops over is one too)
            outer = frozenset().union(*loops[number + 1 :]) & set(here.f_code.co_freevars)
            for found in _names_here(module, here.f_locals, depth, loops[number] | outer):
                if found not in taken:
                    return found
    finally:
        del frame, frames
    return None


def _names_here(
    module: torch.nn.Module, local: dict[str, Any], depth: int, loops: frozenset[str] = frozenset()
) -> Iterator[str]:
    """The names one frame holds `module` by, best first (see `held_as`), then as an item of a
    list, tuple or dict a variable holds (`blocks.1`), last its path in a module a variable holds
    (`top.vae(z)`: `vae`, not `top.vae`, whose stage, `top`, `top.dit` shared; no `_orig_mod`).
    A loop variable (`loops`) names none: it holds each item in turn (`for m in [dit, vae]`)."""
    owner = local.get("self")
    if isinstance(owner, torch.nn.Module) and owner is not module:
        for attr, child in owner.named_children():
            if child is module:
                yield f"{held_as(owner, depth + 1) or type(owner).__name__.lower()}.{attr}"
    elif owner is not None and hasattr(owner, "__dict__"):
        yield from (str(attr) for attr, value in vars(owner).items() if value is module)
    items = list(_items_holding(module, local))
    yield from (f"{var}.{key}" for var, key, alike in items if alike)  # `for block in blocks`
    yield from (v for v, value in local.items() if value is module and v not in ("self", *loops))
    # an unlike model by its key (`components["vae"]`: `vae`); by its index, none: `models.1`
    # would share stage `models` with `models.0`, so its class names it
    yield from (key for _, key, alike in items if not alike and key.isidentifier())
    for var, value in local.items():
        if var != "self" and isinstance(value, torch.nn.Module) and value is not module:
            for path, child in value.named_modules(remove_duplicate=False):
                if child is module:
                    yield ".".join(p for p in path.split(".") if p != "_orig_mod") or var


@functools.lru_cache(maxsize=256)
def _loop_variables(code: Any) -> frozenset[str]:
    """The names a `for` loop (or a comprehension) of this code binds in turn: those stored
    right after a FOR_ITER, unpacked ones too (`for i, m in enumerate(models)`, `for m, *rest
    in pairs`), also where Python 3.13 joins two stores, or a store and the next load, in one
    instruction (STORE_FAST_STORE_FAST, STORE_FAST_LOAD_FAST: their argval, two names)."""
    found: set[str] = set()
    stores = 0  # how many stores the last FOR_ITER's item still has to make
    for instruction in dis.get_instructions(code):
        opname, arg = instruction.opname, int(instruction.arg or 0)
        if opname == "FOR_ITER":
            stores = 1
        elif not stores or opname in ("EXTENDED_ARG", "CACHE", "NOP"):
            continue
        elif opname == "UNPACK_SEQUENCE":
            stores += arg - 1
        elif opname == "UNPACK_EX":  # (names before the starred one, in its low byte; after)
            stores += (arg & 0xFF) + (arg >> 8)
        elif opname.startswith("STORE_"):
            value = instruction.argval
            names = value if isinstance(value, tuple) else (value,)
            names = names[:1] if opname == "STORE_FAST_LOAD_FAST" else names
            found.update(str(n) for n in names)
            stores = max(0, stores - len(names))
        else:
            stores = 0
    return frozenset(found)


def _items_holding(
    module: torch.nn.Module, local: Mapping[str, object]
) -> Iterator[tuple[str, Any, bool]]:
    """Where a list, tuple or dict a variable holds (or a `ModuleList`, `ModuleDict`,
    `Sequential`; lists of lists taken whole: `groups.1.0`) has `module` as an item
    (`blocks.1`), and whether its items are a stack of blocks, which a loop variable holds in
    turn (named by the list): modules whose classes repeat (blocks of two kinds alternating
    too), or one module; or not (`[dit, vae]`: the variable wins)."""
    for var, value in local.items():
        if isinstance(value, _HOLDERS) and len(value) <= 1000 and not _namespace(value):
            items = list(itertools.islice(_leaves(value), 1001))
            if len(items) > 1000:  # (a list of lists of tensors, say: not a stack of blocks)
                continue
            kinds = {type(getattr(item, "_orig_mod", item)) for _, item in items}  # (compiled)
            modules = all(isinstance(item, torch.nn.Module) for _, item in items)
            alike = modules and (len(items) == 1 or len(kinds) < len(items))
            yield from ((var, key, alike) for key, item in items if item is module)


def _namespace(value: object) -> bool:
    """A module's globals held as a dict (runpy's `run_globals`): variables, not a container."""
    return isinstance(value, dict) and "__builtins__" in value


_HOLDERS = (list, tuple, dict, torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.Sequential)


def _leaves(value: object, depth: int = 0) -> Iterator[tuple[str, object]]:
    """The items of a list, tuple, dict or module container, by key; those of a list,
    tuple or dict in it (a list of lists of blocks) by their keys joined (`1.0`), two levels
    down (a module container in it is an item: a block)."""
    assert isinstance(value, _HOLDERS)
    pairs = value.items() if isinstance(value, (dict, torch.nn.ModuleDict)) else enumerate(value)
    for key, item in pairs:
        if isinstance(item, (list, tuple, dict)) and depth < 2 and len(item) <= 1000:
            yield from ((f"{key}.{sub}", leaf) for sub, leaf in _leaves(item, depth + 1))
        else:
            yield str(key), item


def top_name(module: torch.nn.Module, taken: Container[str]) -> str:
    """A top module's name (`held_as`), else its class in lower case (a compiled one's)."""
    kind = type(getattr(module, "_orig_mod", module)).__name__.lower()
    name = numbered = held_as(module, taken=taken) or kind
    number = 1  # (a name another module has: numbered, `blk_2`)
    while numbered in taken:
        number += 1
        numbered = f"{name}_{number}"
    return numbered
