"""The cycle collector is off while classify builds its rows and cards, and as it was after,
also when the run fails."""

from __future__ import annotations

import gc

import pytest
from helpers import SMOKE

from ncu_classify.core.collector import collector_paused
from ncu_classify.verdicts import classify as classify_module
from ncu_classify.verdicts.rules import load_rules


def test_paused_inside_and_restored_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("stop")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_classify_reads_with_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    original = classify_module.kernel_card

    def card(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(classify_module, "kernel_card", card)
    cards = classify_module.classify([SMOKE / "dit.ncu-rep.xz"], load_rules(), jobs=1)
    assert len(cards.cards) == 3 and seen == [False, False, False]
    assert gc.isenabled()
