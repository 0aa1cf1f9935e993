"""The replay target's command line, typed by hand: one usage line, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args", [[], ["batch.json"], ["a", "b", "c"]])
def test_a_replay_run_without_its_two_files_says_how_to_run_it(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ncu_classify.replay", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "usage: python -m ncu_classify.replay BATCH.json STATUS.jsonl"
        " (capture runs this under ncu)\n"
    )
