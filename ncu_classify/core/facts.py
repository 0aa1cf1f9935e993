"""Facts about a machine, typed: a model that is written with the facts it holds, and keeps
the ones it does not name (a newer tool's, another GPU's), so that a file read and written
again says what it said. A fact of an unexpected kind (a clock given as text in a hand-edited
file) is not a reason to refuse the file: it is kept verbatim under `as_given`, and read as
unknown."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

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
    """Base of the machine descriptions: unknown keys kept, only the facts held are written,
    each under its name in the file (a field's alias where a document spells it its own way),
    in the document's own order (`WRITE_ORDER` first, then the fields' order)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, serialize_by_alias=True)
    WRITE_ORDER: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _json_names(cls) -> dict[str, str]:
        """Each fact's name in the file -> its field."""
        return {field.alias or name: name for name, field in cls.model_fields.items()}

    @model_validator(mode="before")
    @classmethod
    def _odd_kept_aside(cls, data: Any) -> Any:
        """Facts whose value is not of their kind moved under `as_given`, kept as they were."""
        if not isinstance(data, dict):
            return data
        fields = {**{n: n for n in cls.model_fields}, **cls._json_names()}
        odd = {k: v for k, v in data.items() if k in fields and not _fits(cls, fields[k], v)}
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
        fields = type(self).model_fields
        named = {n: (fields[n].alias or n) if n in fields else n for n in self.model_fields_set}
        held = set(named.values()) | set(self.model_extra or {})
        first = [key for key in type(self).WRITE_ORDER if key in data and key in held]
        rest = [key for key in data if key in held and key not in first]
        return {key: data[key] for key in (*first, *rest)}

    def holds(self) -> bool:
        """Whether anything at all is known."""
        return bool(self.model_fields_set or self.model_extra)


class Machine(Facts):
    """What a capture ran on, one model and one spelling for every document that says it (the
    manifest's `host`, the cards' `captures`): the GPU's name and SM count, the driver, and the
    software that measured and replayed (ncu, CUDA runtime, torch, cuDNN, Python). A document
    that publishes another name for a fact keeps it through the field's alias."""

    gpu: str | None = None
    sm_count: int | None = None
    driver: str | None = None
    ncu: str | None = None
    cuda_runtime: str | None = None
    torch: str | None = None
    cudnn: int | str | None = None
    python: str | None = None

    def machine(self) -> dict[str, Any]:
        """The machine facts held, by field name: what another document's model is built from."""
        return {
            name: getattr(self, name)
            for name in Machine.model_fields
            if name in self.model_fields_set
        }


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
