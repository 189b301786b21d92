"""The scripts of docs/data/ (each page's tables from its data), loaded as modules by the page tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parents[1] / "docs"


def load(name: str, path: Path | None = None) -> ModuleType:
    """docs/data/NAME.py (or ``path``) as a module of its own."""
    spec = importlib.util.spec_from_file_location(name, path or DOCS / "data" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # a dataclass in it resolves its annotations through its module
    spec.loader.exec_module(mod)
    return mod
