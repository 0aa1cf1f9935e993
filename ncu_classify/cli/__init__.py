"""The `ncu-classify` command: typer commands, one module per stage; nothing imports this package.

`main` is the console entry point (`ncu-classify = "ncu_classify.cli:main"`); `run(argv)` runs
one command line and returns its exit code (tests call it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["main", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import entry

        return getattr(entry, name)
    raise AttributeError(f"module 'ncu_classify.cli' has no attribute {name!r}")
