"""The published JSON Schema of the cards file, generated from the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path

from .cards import CardFile

SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "cards.schema.json"


def cards_schema_text() -> str:
    """The schema as stable, indented JSON text."""
    schema = CardFile.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/ncu-classify/ncu-classify/cards.schema.json"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
