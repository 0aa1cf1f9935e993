"""The console entry point, kept apart from the commands so that it is in place before they are
imported: SIGTERM and SIGHUP unwind like Ctrl-C from the first moment, and an interrupt while
the commands are still being imported (the first half second of every run) ends as one later
does, in one line and exit 130, instead of a traceback.
"""

from __future__ import annotations

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
    sys.exit(run(sys.argv[1:]))
