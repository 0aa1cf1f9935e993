"""The published JSON Schemas of the cards file, of `diff --format json` and of `next`'s JSON,
generated from
the pydantic models (tests check that the committed files are current)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from ..cards.model import CardFile
from ..compare.model import DiffFile
from .next_moves import NextMoves

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
SCHEMA_FILE = SCHEMAS / "cards.schema.json"
DIFF_SCHEMA_FILE = SCHEMAS / "diff.schema.json"
NEXT_SCHEMA_FILE = SCHEMAS / "next.schema.json"


def _schema_text(model: type[BaseModel], name: str) -> str:
    schema = model.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://github.com/ncu-classify/ncu-classify/{name}"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def cards_schema_text() -> str:
    """The cards schema as stable, indented JSON text."""
    return _schema_text(CardFile, "cards.schema.json")


def diff_schema_text() -> str:
    """The diff schema as stable, indented JSON text."""
    return _schema_text(DiffFile, "diff.schema.json")


def next_schema_text() -> str:
    """The schema of `next -o F.json` as stable, indented JSON text."""
    return _schema_text(NextMoves, "next.schema.json")
