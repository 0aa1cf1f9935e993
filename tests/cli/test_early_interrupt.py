"""An interrupt that lands while the command is still starting ends as one later does: the one
line, exit 130, no traceback, no output; SIGTERM and SIGHUP unwind like Ctrl-C from the first
moment. Two windows: the import of the commands (the first half second of every run), and a
command's own imports before its errors() (where typer turns the interrupt into a silent 130).
The child holds the import until the test has sent the signal: the timing is not left to luck."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ncu_classify.cli import app, interrupts, start

HELD = """
import importlib.abc, pathlib, sys, time
ready, held = pathlib.Path(sys.argv[1]), sys.argv[4]

class Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == held:
            ready.write_text("importing")
            time.sleep(60)
        return None

sys.meta_path.insert(0, Hold())
sys.argv = ["ncu-classify", "classify", sys.argv[2], "-o", sys.argv[3]]
from ncu_classify.cli import main
main()
"""


@pytest.mark.parametrize("held", ["ncu_classify.cli.entry", "ncu_classify.verdicts.classify"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_during_start_up_is_one_line_and_130(
    sig: signal.Signals, held: str, tmp_path: Path
) -> None:
    ready, out = tmp_path / "ready", tmp_path / "cards.json"
    script = textwrap.dedent(HELD)
    argv = [sys.executable, "-c", script, str(ready), str(tmp_path), str(out), held]
    proc = subprocess.Popen(
        argv,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr) == (130, "ncu-classify: interrupted\n")
    assert not out.exists()


def test_the_start_up_codes_are_the_commands_codes() -> None:
    assert start.INTERRUPTED == app.EXIT_INTERRUPTED
    assert tuple(getattr(signal, name) for name in start.UNWINDING) == interrupts.UNWINDING
