"""Fixtures of the verdicts tests alone (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from ncu_classify.cards.model import CardFile


@pytest.fixture(scope="session")
def cards_by_group(smoke_cards: CardFile) -> dict:
    """The smoke cards by their group."""
    return {c.group: c for c in smoke_cards.cards}
