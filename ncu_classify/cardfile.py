"""Cards files on disk: read any cards JSON (ours or legacy), write ours one card per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .atomic import write_text_atomic
from .cards import CardFile
from .errors import CardsError


def load_cards(path: Path) -> dict[str, Any]:
    """Read a cards file; it must be a JSON object with a `cards` list."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CardsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CardsError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cards"), list):
        raise CardsError(f"{path}: not a cards file (no top-level `cards` list)")
    for index, card in enumerate(doc["cards"]):
        if not isinstance(card, dict) or not isinstance(card.get("kernels", []), list):
            raise CardsError(f"{path}: cards[{index}] is not a card object with a kernels list")
    return doc


def cards_json_text(doc: dict[str, Any]) -> str:
    """JSON text with one card per line: diffable card by card, and encoded by the C encoder
    (`indent=` would switch json to its pure-Python encoder, the slowest step of classify)."""
    parts = []
    for key, value in doc.items():
        if key == "cards" and value:
            body = "[\n" + ",\n".join(f"    {_compact(card)}" for card in value) + "\n  ]"
        else:
            body = _compact(value)
        parts.append(f"  {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_cards_json(path: Path, doc: dict[str, Any]) -> None:
    """Write a cards document (plain JSON data) atomically."""
    write_text_atomic(path, cards_json_text(doc))


def write_card_file(path: Path, cards: CardFile) -> None:
    """Write a CardFile atomically; cards are serialised by pydantic, one per line."""
    head = cards.model_dump(mode="json", exclude={"cards"})
    parts = []
    for key in CardFile.model_fields:
        if key == "cards":
            lines = ",\n".join(f"    {card.model_dump_json()}" for card in cards.cards)
            parts.append(f'  "cards": [\n{lines}\n  ]' if lines else '  "cards": []')
        else:
            parts.append(f"  {json.dumps(key)}: {_compact(head[key])}")
    write_text_atomic(path, "{\n" + ",\n".join(parts) + "\n}\n")
