"""NVIDIA's metrics library loaded on a native thread while the process does other work.

The first kernel a process reads makes ncu_report load `libnvperf_host.so` (37 MB), whose
set-up costs 75 ms on the H200 host and 110-200 ms on a 2-core one, all of it under the GIL
and before any kernel is read. `start_loading` hands the same dlopen to libc on a thread
(ctypes releases the GIL around a foreign call), so it runs beside the rules parse and the
read plan; ncu_report's own dlopen then finds it loaded. `finish_loading` waits for it: fork
is unsafe beside a running thread, and the readers fork. Anything unexpected (no such file
beside ncu_report, no glibc) leaves ncu_report to load it as before, and so does the
environment variable NCU_CLASSIFY_NO_PRELOAD=1 (for measuring what the thread saves).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import threading
import time
from pathlib import Path

LIBRARY = "libnvperf_host.so"  # beside ncu_report's module in NVIDIA's ncu-report wheel
RTLD_NOW = 2
_loading: threading.Thread | None = None


def start_loading() -> None:
    """Begin loading NVIDIA's metrics library on a thread (none while one runs; again after
    `finish_loading` the dlopen finds it loaded at once); never raises."""
    global _loading
    if _loading is not None or os.environ.get("NCU_CLASSIFY_NO_PRELOAD"):
        return
    library = _library_path()
    if library is None:
        return
    _loading = threading.Thread(target=_dlopen, args=(library,), name="nvperf-preload", daemon=True)
    _loading.start()


def loading_task() -> str | None:
    """The OS thread id of the loading thread while there is one (it ends before any fork)."""
    thread = _loading
    return str(thread.native_id) if thread is not None and thread.native_id else None


def finish_loading() -> None:
    """Wait until the loading thread has ended, its OS thread too (Python's join returns a
    moment before the thread leaves the process, and a reader that forks checks for threads)."""
    global _loading
    thread, _loading = _loading, None
    if thread is None:
        return
    thread.join()
    task = Path(f"/proc/self/task/{thread.native_id}")
    deadline = time.monotonic() + 1.0
    while task.exists() and time.monotonic() < deadline:
        time.sleep(0.0005)


def _library_path() -> Path | None:
    """The metrics library beside ncu_report (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec("ncu_report")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    library = Path(spec.origin).parent / LIBRARY
    return library if library.is_file() else None


def _dlopen(library: Path) -> None:
    """libc's dlopen of `library`, kept loaded for good (ncu_report will use it)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.dlopen.restype = ctypes.c_void_p
        libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
        libc.dlopen(os.fsencode(library), RTLD_NOW)
