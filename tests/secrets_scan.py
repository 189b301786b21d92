"""Looking for secret values where they must not be: texts, files, trees (plain and base64 forms)."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path


def needles(secrets: dict[str, str]) -> dict[str, bytes]:
    """``name -> value`` to the byte strings to look for: the value and its base64 encodings."""
    out: dict[str, bytes] = {}
    for name, value in secrets.items():
        assert len(value) >= 8, f"{name}: {len(value)} characters is too short to scan for"
        raw = value.encode()
        out[name] = raw
        out[f"{name} (base64)"] = base64.b64encode(raw)
        out[f"{name} (urlsafe base64)"] = base64.urlsafe_b64encode(raw)
    return out


def scan(where: str, data: str | bytes, found: dict[str, bytes]) -> list[str]:
    """``where: name`` for every needle that occurs in ``data``."""
    b = data.encode() if isinstance(data, str) else data
    return [f"{where}: {name}" for name, n in found.items() if n in b]


def scan_files(files: Iterable[Path], found: dict[str, bytes], root: Path | None = None) -> tuple[int, list[str]]:
    """(files read, hits) over every file given."""
    n, hits = 0, []
    for f in files:
        if f.is_file() and not f.is_symlink():
            n += 1
            hits += scan(str(f.relative_to(root) if root else f), f.read_bytes(), found)
    return n, hits


def scan_tree(root: Path, found: dict[str, bytes]) -> tuple[int, list[str]]:
    """(files read, hits) over every file under ``root``."""
    return scan_files(sorted(root.rglob("*")), found, root)
