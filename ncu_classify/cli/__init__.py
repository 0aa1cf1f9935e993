"""The `ncu-classify` command: typer commands, one module per step; nothing imports this package.

`main` is the console entry point (`ncu-classify = "ncu_classify.cli:main"`); `run(argv)` runs
one command line and returns its exit code (tests call it).
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["main", "run"]
__getattr__ = lazy_face(__name__, {"main": "start", "run": "entry"})
