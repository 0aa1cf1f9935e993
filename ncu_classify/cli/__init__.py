"""The `ncu-classify` command: typer commands, one module per stage; nothing imports this package.

`main` is the console entry point (`ncu-classify = "ncu_classify.cli:main"`); `run(argv)` runs
one command line and returns its exit code (tests call it).
"""

from __future__ import annotations

__all__ = ["main", "run"]
TYPE_CHECKING = False  # `typing` not imported: see the package's __init__
if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str) -> Any:
    """`main` and `run`, each imported on first use (`core.lazy` is not imported before the
    entry point has its Ctrl-C handler in place)."""
    if name == "main":
        from .start import main

        return main
    if name == "run":
        from .entry import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
