"""core.cache: a rules file read back from the cache is the rules file parsed; a damaged,
foreign or unreadable entry, or a cache turned off, changes nothing but the time taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncu_classify.core.cache import CACHE_ENV, cache_dir
from ncu_classify.core.errors import RulesError
from ncu_classify.core.yamlio import validate_yaml
from ncu_classify.verdicts.drill import DRILL_RULES
from ncu_classify.verdicts.rules import DEFAULT_RULES, RuleSet, load_rules


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.mark.parametrize("path", [DEFAULT_RULES, DRILL_RULES])
def test_cached_rules_equal_the_parsed_file(cache: Path, path: Path) -> None:
    parsed = validate_yaml(path, RuleSet, RulesError)
    first = load_rules(path)
    assert [p.name.split("-")[0] for p in cache.iterdir()] == ["RuleSet"]
    second = load_rules(path)  # from the entry
    assert first.rules == second.rules == parsed
    assert first.sha256 == second.sha256 and first.path == second.path


def test_damaged_entry_is_parsed_again_and_replaced(cache: Path) -> None:
    load_rules()
    (entry,) = cache.iterdir()
    entry.write_text('{"id": "other", "rules": []}')  # valid JSON, not a valid RuleSet
    assert load_rules().rules == validate_yaml(DEFAULT_RULES, RuleSet, RulesError)
    assert RuleSet.model_validate_json(entry.read_text()).id != "other"
    entry.write_bytes(b"\xff\xfe not json")
    assert load_rules().rules.id == RuleSet.model_validate_json(entry.read_bytes()).id


def test_a_changed_rules_file_gets_its_own_entry(cache: Path, tmp_path: Path) -> None:
    edited = tmp_path / "rules.yaml"
    edited.write_text(
        DEFAULT_RULES.read_text().replace(
            '{metric: sm_pct, op: ">=", value: 60}', '{metric: sm_pct, op: ">=", value: 61}', 1
        )
    )
    assert load_rules(edited).sha256 != load_rules().sha256
    assert len(list(cache.iterdir())) == 2
    assert load_rules(edited).rules != load_rules().rules


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    assert cache_dir() is None
    monkeypatch.chdir(tmp_path)
    assert load_rules().rules == validate_yaml(DEFAULT_RULES, RuleSet, RulesError)
    assert list(tmp_path.iterdir()) == []


def test_unwritable_cache_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert load_rules().rules == validate_yaml(DEFAULT_RULES, RuleSet, RulesError)


def test_invalid_rules_are_never_kept(cache: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nrules: []\n")
    with pytest.raises(RulesError, match=r"bad\.yaml"):
        load_rules(bad)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_fifo_or_device_at_the_entry_is_passed_over(cache: Path) -> None:
    import os

    load_rules()
    (entry,) = cache.iterdir()
    entry.unlink()
    os.mkfifo(entry)  # reading it would block forever
    assert load_rules().rules == validate_yaml(DEFAULT_RULES, RuleSet, RulesError)
    entry.unlink()
    entry.symlink_to("/dev/zero")  # reading it would never end
    assert load_rules().rules == validate_yaml(DEFAULT_RULES, RuleSet, RulesError)
