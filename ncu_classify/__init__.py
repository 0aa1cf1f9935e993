"""ncu-classify: what bounds each GPU kernel, from Nsight Compute hardware counters.

`ncu_classify.load_cards(path, level="card"|"kernel")` gives a cards file as a pandas DataFrame
(imported on first use, so the CLI starts without pandas).
"""

from __future__ import annotations

from ._version import __version__

# The console script imports this package before its Ctrl-C handler is in place: nothing here
# is imported that Python has not loaded already (not even `typing`, 7 ms), so that the window
# in which Ctrl-C gives a traceback is Python's own start-up alone (test_small_hardening.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CardsError", "NcuClassifyError", "__version__", "load_cards"]


def __getattr__(name: str) -> Any:
    if name == "load_cards":
        from .present.frames import load_cards

        return load_cards
    if name in ("CardsError", "NcuClassifyError"):
        from .core import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'ncu_classify' has no attribute {name!r}")
