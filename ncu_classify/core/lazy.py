"""Lazy package faces: a package names its entry points and the module each lives in, and a
module is imported only when one of its names is first used, so that the CLI starts without
loading what it does not run (ncu_report, pandas, torch, jinja2).

The console script imports `ncu_classify.cli` (this module with it) before its Ctrl-C handler
is in place: nothing is imported here that Python has not loaded at start-up (not `typing`,
7 ms), so that the window in which Ctrl-C gives a traceback is Python's own start-up alone.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def lazy_face(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `homes` (name -> module of the package)
    imported on first use."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
