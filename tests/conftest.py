"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True, scope="session")
def _history_store(tmp_path_factory) -> None:
    """Every `wanwide report`/`compare` a test runs adds its runs to the history store: one of the session's,
    never the user's (~/.local/share/wanwide/history). A test that looks at the store names its own."""
    if "WANWIDE_HISTORY" not in os.environ:
        os.environ["WANWIDE_HISTORY"] = str(tmp_path_factory.mktemp("history"))
