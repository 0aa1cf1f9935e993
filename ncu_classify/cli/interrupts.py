"""Signal handling scoped to the work that needs it, and always restored.

A handler left installed is inherited by every process forked later; an earlier release left
capture's SIGTERM handler in place, and forked readers that inherited it could lose a SIGTERM
and block forever (see workers.py).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block SIGTERM (a scheduler's kill) and SIGHUP (a closed terminal or ssh
    session) raise KeyboardInterrupt like Ctrl-C, so that capture stops its ncu processes and
    keeps its manifest and every command removes its temporary copies; the previous handlers
    are put back on the way out. A signal ignored on purpose (SIGHUP under `nohup`) stays
    ignored. Outside the main thread (no signals there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in UNWINDING
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


UNWINDING = (signal.SIGTERM, signal.SIGHUP)  # signals that unwind like Ctrl-C
