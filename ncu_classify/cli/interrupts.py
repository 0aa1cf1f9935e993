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
    """Inside the block SIGTERM (a scheduler's kill) raises KeyboardInterrupt like Ctrl-C, so
    that capture stops its ncu processes and keeps its manifest; the previous handler is put
    back on the way out. Outside the main thread (no signals there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
