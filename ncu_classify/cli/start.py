"""The console entry point, kept apart from the commands so that it is in place before they are
imported: SIGTERM and SIGHUP unwind like Ctrl-C from the first moment, and an interrupt while
the commands are still being imported (the first half second of every run) ends as one later
does, in one line and exit 130, instead of a traceback; one that lands once the command is
done (while the interpreter shuts down) ends the process at once with the command's own code.
"""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED = 130  # app.EXIT_INTERRUPTED, which is not imported yet when this runs
UNWINDING = ("SIGTERM", "SIGHUP")  # interrupts.UNWINDING, by name


def main() -> None:
    """Console-script entry point (`ncu-classify = "ncu_classify.cli:main"`)."""
    for name in UNWINDING:  # one ignored on purpose (`nohup`) stays ignored
        sig = getattr(signal, name)
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler)
    try:
        from .entry import run
    except KeyboardInterrupt:
        sys.stderr.write("ncu-classify: interrupted\n")
        raise SystemExit(INTERRUPTED) from None
    code = run(sys.argv[1:])
    _settled(code)
    sys.exit(code)


def _settled(code: int) -> None:
    """The command's outcome is final (its outputs written, its last line printed): what it
    printed is flushed, and a signal from here on ends the process at once with the command's
    own code, instead of a traceback from the interpreter's shutdown or a wait there (a
    thread of a recorded program joined at exit) that no signal could end."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed or full stream: run() has said so already
            pass
    for name in ("SIGINT", *UNWINDING):  # one ignored on purpose (`nohup`) stays ignored
        sig = getattr(signal, name)
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, lambda *_: os._exit(code))
