"""Lazy package faces: a package names its entry points and the module each lives in, and a
module is imported only when one of its names is first used, so that the CLI starts without
loading what it does not run (ncu_report, pandas, torch, jinja2)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_face(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `homes` (name -> module of the package)
    imported on first use."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
