"""Where the tests find the mirrored upstream sources (openstack-helm, mariadb-operator …).

``WANWIDE_UPSTREAM_DIR`` when set, else ``../shared/upstream`` beside the checkout when it exists
(as hack/test.sh and hack/e2e-real.sh decide); None: the scripts fetch the pinned refs upstream,
as a user's machine would.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def upstream_dir() -> Path | None:
    given = os.environ.get("WANWIDE_UPSTREAM_DIR")
    if given:
        return Path(given)
    beside = REPO.parent / "shared" / "upstream"
    return beside if beside.is_dir() else None


def upstream_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with WANWIDE_UPSTREAM_DIR set when a mirror is known."""
    out = dict(os.environ if env is None else env)
    found = upstream_dir()
    if found is not None:
        out["WANWIDE_UPSTREAM_DIR"] = str(found)
    return out
