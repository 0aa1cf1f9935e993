"""Models built from trusted values at the cost of a dict: pydantic's `model_construct` walks
every field's aliases and default machinery on each call (16 us a card on the hot path of
classify, against the 1.6 ms the kernel's read costs), so each model's plan of defaults is
worked out once here and replayed. Same result as `model_construct`: given values kept as
they are, defaults filled (factories called afresh, mutable defaults copied), the fields set
recorded."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

Model = TypeVar("Model", bound=BaseModel)
_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple, frozenset)
# The fields' names in order, and per field: (name, a default to share, a callable making a
# fresh default): PydanticUndefined and None for a required field; a model that model_construct
# must build itself has no plan.
Field = tuple[str, Any, Callable[[], Any] | None]
Plan = tuple[tuple[str, ...], tuple[Field, ...]] | None
_PLANS: dict[type, Plan] = {}


def _plan(cls: type[BaseModel]) -> Plan:
    """The defaults of `cls`'s fields in order, or None where `model_construct` does more than
    fill defaults (aliases, extra fields kept, post-init hooks, root models)."""
    if (
        cls.__pydantic_post_init__
        or cls.__pydantic_root_model__
        or cls.model_config.get("extra") == "allow"
    ):
        return None
    plan: list[Field] = []
    for name, field in cls.__pydantic_fields__.items():
        if field.alias not in (None, name) or field.validation_alias is not None:
            return None
        if field.default_factory is not None:
            if field.default_factory_takes_validated_data:
                return None
            plan.append((name, None, cast(Callable[[], Any], field.default_factory)))
        elif field.default is PydanticUndefined:
            plan.append((name, PydanticUndefined, None))
        elif isinstance(field.default, _IMMUTABLE):
            plan.append((name, field.default, None))
        else:
            plan.append((name, None, _fresh_copies(field.default)))
    return tuple(name for name, _, _ in plan), tuple(plan)


def _fresh_copies(value: Any) -> Callable[[], Any]:
    """A maker of fresh deep copies of a mutable default (as pydantic copies it per model)."""
    return lambda: copy.deepcopy(value)


def trusted(cls: type[Model], fields_set: Iterable[str] | None = None, /, **values: Any) -> Model:
    """`cls.model_construct(fields_set, **values)`, without its per-call field walk."""
    plan = _PLANS[cls] if cls in _PLANS else _PLANS.setdefault(cls, _plan(cls))
    if plan is None:
        return cls.model_construct(None if fields_set is None else set(fields_set), **values)
    names, fields = plan
    if tuple(values) == names:  # every field given, in order: the call's own dict will do
        data = values
    else:
        data = {}
        for name, default, make in fields:
            if name in values:
                data[name] = values[name]
            elif make is not None:
                data[name] = make()
            elif default is not PydanticUndefined:
                data[name] = default
    model = cls.__new__(cls)
    setattr_ = object.__setattr__
    setattr_(model, "__dict__", data)
    named = values.keys() & data.keys() if fields_set is None else set(fields_set)
    setattr_(model, "__pydantic_fields_set__", named)
    setattr_(model, "__pydantic_extra__", None)
    setattr_(model, "__pydantic_private__", None)
    return model
