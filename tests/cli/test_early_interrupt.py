"""An interrupt that lands while the command is still starting ends as one later does: the one
line, exit 130, no traceback, no output; SIGTERM and SIGHUP unwind like Ctrl-C from the first
moment. Two windows: the import of the commands (the first half second of every run), and a
command's own imports before its errors() (where typer turns the interrupt into a silent 130).
The child holds the import until the test has sent the signal: the timing is not left to luck."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import SMOKE

from ncu_classify.cli import app, interrupts, start

HELD = """
import importlib.abc, pathlib, sys, time
ready, held = pathlib.Path(sys.argv[1]), sys.argv[4]
release = ready.with_name("release")

class Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == held:
            ready.write_text("importing")
            deadline = time.monotonic() + 60
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return None

sys.meta_path.insert(0, Hold())
sys.argv = ["ncu-classify", "classify", sys.argv[2], "-o", sys.argv[3], "--jobs", "1"]
from ncu_classify.cli import main
main()
"""


def _held_run(
    held: str, sig: signal.Signals, tmp_path: Path, ignored: tuple[signal.Signals, ...] = ()
) -> tuple[int, str, Path]:
    """Classify the smoke capture's dit report in a child whose import of `held` waits until
    `sig` has been sent (`ignored`: the signals the child starts with ignored, as under
    nohup); (exit code, stderr, the cards' path)."""
    return _signalled(HELD, sig, tmp_path, held, ignored=ignored)


def _signalled(
    script: str,
    sig: signal.Signals,
    tmp_path: Path,
    *extra: str,
    ignored: tuple[signal.Signals, ...] = (),
    release: bool = True,
) -> tuple[int, str, Path]:
    """Run `script` (argv: its ready file, the dit report, the cards' path, `extra`) with the
    signals at their defaults, as from a terminal, even when the suite runs under nohup (but
    `ignored`); once it says it is ready, send `sig`, then let it go on (unless not
    `release`: then it waits a minute); (exit code, stderr, the cards' path)."""
    ready, out = tmp_path / "ready", tmp_path / "cards.json"
    report = tmp_path / "dit.ncu-rep.xz"  # a loose report: no warning (in its capture folder,
    report.symlink_to(SMOKE / "dit.ncu-rep.xz")  # one says it is read as part of the capture)
    argv = [sys.executable, "-c", textwrap.dedent(script), str(ready), str(report), str(out)]

    def dispositions() -> None:  # as from a terminal, whatever this test was started under
        for each in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(each, signal.SIG_IGN if each in ignored else signal.SIG_DFL)

    proc = subprocess.Popen(
        [*argv, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=dispositions,
    )
    deadline = time.monotonic() + 120
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(sig)
    time.sleep(0.1)  # delivered (an ignored one is dropped) before the child goes on
    if release:
        (tmp_path / "release").write_text("go")
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr, out


@pytest.mark.parametrize("held", ["ncu_classify.cli.entry", "ncu_classify.verdicts.classify"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_during_start_up_is_one_line_and_130(
    sig: signal.Signals, held: str, tmp_path: Path
) -> None:
    code, stderr, out = _held_run(held, sig, tmp_path)
    assert (code, stderr) == (130, "ncu-classify: interrupted\n")
    assert not out.exists()


@pytest.mark.parametrize("held", ["ncu_classify.cli.entry", "ncu_classify.verdicts.classify"])
def test_under_nohup_a_hangup_is_ignored(held: str, tmp_path: Path) -> None:
    code, stderr, out = _held_run(held, signal.SIGHUP, tmp_path, ignored=(signal.SIGHUP,))
    assert (code, stderr) == (0, "")
    assert len(json.loads(out.read_text())["cards"]) == 3


def test_the_start_up_codes_are_the_commands_codes() -> None:
    assert start.INTERRUPTED == app.EXIT_INTERRUPTED
    assert tuple(getattr(signal, name) for name in start.UNWINDING) == interrupts.UNWINDING


AT_EXIT = """
import atexit, pathlib, sys, time
ready = pathlib.Path(sys.argv[1])
release = ready.with_name("release")

def hold():  # runs while the interpreter shuts down, after the command returned its code
    ready.write_text("exiting")
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.01)

atexit.register(hold)
sys.argv = ["ncu-classify", "classify", sys.argv[2], "-o", sys.argv[3], "--jobs", "1"]
from ncu_classify.cli import main
main()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_once_the_command_is_done_leaves_its_code_and_output(
    sig: signal.Signals, tmp_path: Path
) -> None:
    """Until now a late Ctrl-C or SIGTERM printed a KeyboardInterrupt traceback from the
    interpreter's shutdown; the cards were written all the same."""
    code, stderr, out = _signalled(AT_EXIT, sig, tmp_path)
    assert (code, stderr) == (0, "")
    assert len(json.loads(out.read_text())["cards"]) == 3  # the dit report's three shapes


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_wait_at_exit_at_once(sig: signal.Signals, tmp_path: Path) -> None:
    """A wait at exit that nothing releases (a recorded program's thread joined there): the
    signal ends it at once, with the command's code; ignoring it would leave SIGKILL alone."""
    started = time.monotonic()
    code, stderr, out = _signalled(AT_EXIT, sig, tmp_path, release=False)
    assert (code, stderr) == (0, "")
    assert time.monotonic() - started < 30  # the hold gives up after 60 s
    assert len(json.loads(out.read_text())["cards"]) == 3
