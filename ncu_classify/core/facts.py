"""Facts about a machine, typed: a model that is written with the facts it holds, and keeps
the ones it does not name (a newer tool's, another GPU's), so that a file read and written
again says what it said. A fact of an unexpected kind (a clock given as text in a hand-edited
file) is not a reason to refuse the file: it is kept verbatim under `as_given`, and read as
unknown."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
    model_validator,
)

AS_GIVEN = "as_given"  # where facts of an unexpected kind are kept


class Facts(BaseModel):
    """Base of the machine descriptions: unknown keys kept, only the facts held are written."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _odd_kept_aside(cls, data: Any) -> Any:
        """Facts whose value is not of their kind moved under `as_given`, kept as they were."""
        if not isinstance(data, dict):
            return data
        odd = {k: v for k, v in data.items() if k in cls.model_fields and not _fits(cls, k, v)}
        if not odd:
            return data
        kept = {k: v for k, v in data.items() if k not in odd}
        earlier = kept.get(AS_GIVEN)
        if earlier is not None and not isinstance(earlier, dict):
            earlier = {AS_GIVEN: earlier}  # an `as_given` of another kind is kept too
        kept[AS_GIVEN] = {**(earlier or {}), **odd}
        return kept

    @model_serializer(mode="wrap")
    def _held(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        """The fields that were given (set or read), and the kept unknown ones; never a field
        filled in by its default. (No return annotation: with one, pydantic would publish that
        type in the JSON Schema instead of the model's fields.)"""
        data = handler(self)
        held = self.model_fields_set | set(self.model_extra or {})
        return {key: value for key, value in data.items() if key in held}

    def holds(self) -> bool:
        """Whether anything at all is known."""
        return bool(self.model_fields_set or self.model_extra)


@functools.lru_cache(maxsize=256)
def _adapter(model: type[Facts], key: str) -> TypeAdapter[Any]:
    return TypeAdapter(model.model_fields[key].annotation or Any)


def _fits(model: type[Facts], key: str, value: Any) -> bool:
    """Whether `value` is of the kind the fact `key` holds (strictly: "5" is not an int)."""
    try:
        _adapter(model, key).validate_python(value, strict=True)
    except ValidationError:
        return False
    return True
