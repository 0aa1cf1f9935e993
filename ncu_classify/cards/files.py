"""Cards files on disk: read ours or the legacy format into a CardFile, turn one into text.

`card_file_text` is the one serialiser: one card per line, so that files diff card by card, and
each card and kernel with the fields it holds (see `model`), so that a converted legacy card
keeps its own fields in their order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.atomic import write_text_atomic
from ..core.errors import CardsError, validation_line
from ..core.jsonpos import validation_at
from ..core.metrics import complete
from ..core.textio import MIB, read_json
from .legacy import from_legacy, is_legacy
from .model import SCHEMA_VERSION, Card, CardFile, KernelCard

READABLE_MAJOR = "1."
MAX_CARDS_BYTES = 2048 * MIB  # 100k kernels of real cards are ~0.85 GB


def load_card_file(path: Path) -> CardFile:
    """Read and validate a cards file, ours (any 1.x) or legacy; problems are one CardsError
    line naming the file and the field path."""
    doc = _read_json(path)
    ours = sorted(k for k in ("source_format", "rules_id", "tool_version") if k in doc)
    if is_legacy(doc) and ours:
        raise CardsError(f"{path}: no schema_version, though it has {ours[0]!r} (not legacy)")
    try:
        if is_legacy(doc):
            return from_legacy(doc, str(path))
        version = doc["schema_version"]
        if not isinstance(version, str) or not version.startswith(READABLE_MAJOR):
            raise CardsError(
                f"{path}: schema_version {version!r} is not one this tool reads ({READABLE_MAJOR}x)"
            )
        return CardFile.model_validate(upgrade(doc), strict=True)
    except ValidationError as exc:
        raise CardsError(f"{validation_at(path, exc)}: {validation_line(exc)}") from None
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        # a legacy document whose fields have the wrong kind of value (a list as a name)
        raise CardsError(f"{path}: not a cards file this tool reads: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A cards document of an earlier 1.x schema brought to this one. Before 1.2 `tensor_pct`
    held the tensor pipe over *active* cycles: it moves to `tensor_active_pct` and `tensor_pct`
    is recomputed over elapsed cycles from the kernel's own figures (`metrics.complete`)."""
    if doc.get("schema_version") not in ("1.0", "1.1"):
        return doc
    for card in doc["cards"]:
        for kernel in card.get("kernels") or []:
            _upgrade_kernel(kernel)
    doc["schema_version"] = SCHEMA_VERSION
    return doc


def _upgrade_kernel(kernel: dict[str, Any]) -> None:
    metrics, sources = kernel.get("metrics"), kernel.get("metric_sources")
    if not isinstance(metrics, dict) or not isinstance(sources, dict):
        return
    if "active" not in str(sources.get("tensor_pct", "")):
        return
    metrics["tensor_active_pct"] = metrics.get("tensor_pct")
    sources["tensor_active_pct"] = sources.pop("tensor_pct")
    metrics["tensor_pct"] = None
    metrics.setdefault("sm_cycles_elapsed", None)
    complete(metrics, sources)
    if isinstance(kernel.get("evidence"), dict):
        kernel["evidence"]["tensor_pct"] = metrics["tensor_pct"]
    kernel["missing_metrics"] = sorted(k for k, v in metrics.items() if v is None)


def _read_json(path: Path) -> dict[str, Any]:
    """The JSON object of a cards file, which must hold a `cards` list of card objects."""
    doc = read_json(path, CardsError, MAX_CARDS_BYTES)
    if not isinstance(doc, dict) or not isinstance(doc.get("cards"), list):
        raise CardsError(f"{path}: not a cards file (no top-level `cards` list)")
    if is_legacy(doc):  # read as it comes: the adapter keeps what it can and names the rest
        return doc
    for index, card in enumerate(doc["cards"]):
        if not isinstance(card, dict) or not isinstance(card.get("kernels", []), list):
            raise CardsError(f"{path}: cards[{index}] is not a card object with a kernels list")
    return doc


class KernelJson:
    """The JSON of kernel cards (exclude_unset) as classify's readers made it, in parallel,
    each kept with the very card object it was made from and used for that object alone. A
    card changed in place would keep its old text: write the file before changing any card
    (classify itself never changes one in place; a changed card is a model_copy)."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[KernelCard, str]] = {}

    def keep(self, kernel: KernelCard, text: str) -> None:
        """Keep `text` as the JSON of this very kernel card."""
        self._made[id(kernel)] = (kernel, text)

    def text(self, kernel: KernelCard) -> str | None:
        """The JSON kept for this very kernel card, None if there is none."""
        made = self._made.get(id(kernel))
        return made[1] if made is not None and made[0] is kernel else None


OPTIONAL_HEAD = ("legacy_fields", "coverage", "rules_yaml", "projection")


def card_file_text(cards: CardFile, made: KernelJson | None = None) -> str:
    """JSON text of a CardFile: every header field in model order, then one card per line,
    each card and kernel with the fields it holds. Deterministic for a given CardFile. `made`:
    kernel cards' JSON already made (classify's readers), the same text pydantic writes. The
    pieces are joined once (a 1,000-kernel file is 7 MB: every join copies all of it)."""
    head = cards.model_dump(mode="json", exclude={"cards"})
    made = made or KernelJson()
    pieces = ["{\n"]
    for key in CardFile.model_fields:
        if key == "cards":
            pieces.append('  "cards": [')
            for number, card in enumerate(cards.cards):
                pieces.append(",\n    " if number else "\n    ")
                _card_pieces(card, made, pieces)
            pieces.append("\n  ],\n" if cards.cards else "],\n")
        elif key not in OPTIONAL_HEAD or head[key]:  # written where there are
            pieces.append(f"  {json.dumps(key)}: {_compact(head[key])},\n")
    pieces[-1] = pieces[-1].removesuffix(",\n")
    pieces.append("\n}\n")
    return "".join(pieces)


_CARD_FIELDS = list(Card.model_fields)
_BEFORE_KERNELS = set(_CARD_FIELDS[: _CARD_FIELDS.index("kernels")])
_AFTER_KERNELS = set(_CARD_FIELDS[_CARD_FIELDS.index("kernels") + 1 :])


def _card_pieces(card: Card, kernel_json: KernelJson, pieces: list[str]) -> None:
    """A card's JSON (exclude_unset) onto `pieces`, its kernels' JSON taken where classify's
    readers already made it: the same text pydantic writes, which costs the writer 40 us a
    kernel."""
    made = [kernel_json.text(kernel) for kernel in card.kernels]
    if "kernels" not in card.model_fields_set or not any(made):
        pieces.append(card.model_dump_json(exclude_unset=True))
        return
    head = card.model_dump_json(exclude_unset=True, include=_BEFORE_KERNELS)[:-1]
    pieces.append(head + ("," if head != "{" else "") + '"kernels":[')
    for number, (text, kernel) in enumerate(zip(made, card.kernels, strict=True)):
        pieces.append("," if number else "")
        pieces.append(text if text is not None else kernel.model_dump_json(exclude_unset=True))
    tail = card.model_dump_json(exclude_unset=True, include=_AFTER_KERNELS)[1:]
    pieces.append("]" + ("," if tail != "}" else "") + tail)


def write_card_file(path: Path, cards: CardFile, made: KernelJson | None = None) -> None:
    """Write a CardFile atomically (until the output module takes this over)."""
    write_text_atomic(path, card_file_text(cards, made))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
