"""ncu-classify: what bounds each GPU kernel, from Nsight Compute hardware counters.

`ncu_classify.load_cards(path, level="card"|"kernel")` gives a cards file as a pandas DataFrame
(imported on first use, so the CLI starts without pandas).
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = ["CardsError", "NcuClassifyError", "__version__", "load_cards"]


def __getattr__(name: str) -> Any:
    if name == "load_cards":
        from .present.frames import load_cards

        return load_cards
    if name in ("CardsError", "NcuClassifyError"):
        from .core import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'ncu_classify' has no attribute {name!r}")
