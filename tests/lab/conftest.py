"""Fixtures of the real lab tests: root, the lab packages, a private state dir."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from wanwide.providers.lab import paths


def _skip_reason(need: tuple[str, ...] = ()) -> str | None:
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces)"
    if not shutil.which("ip"):
        return "iproute2 missing"
    missing = [m for m in paths.missing() if any(n in m for n in need)] if need else []
    if missing:
        return f"lab packages missing ({', '.join(missing)}): run hack/install-lab.sh"
    return None


@pytest.fixture(scope="session", autouse=True)
def lab_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every lab test records into a private state dir (never the system one)."""
    d = tmp_path_factory.mktemp("lab-state")
    old = os.environ.get("WANWIDE_LAB_STATE_DIR")
    os.environ["WANWIDE_LAB_STATE_DIR"] = str(d)
    yield d
    from wanwide.providers.lab.state import cleanup_all

    cleanup_all(d, include_live=True)
    for work in Path("/var/tmp").glob(f"wanwide-*-{os.getpid()}"):  # the tests' work dirs, once emptied
        with contextlib.suppress(OSError):  # not empty: what a failed test left is kept to look at
            work.rmdir()
    if old is None:
        os.environ.pop("WANWIDE_LAB_STATE_DIR", None)
    else:
        os.environ["WANWIDE_LAB_STATE_DIR"] = old


@pytest.fixture
def need_net() -> None:
    r = _skip_reason(("vde2",))
    if r:
        pytest.skip(r)


@pytest.fixture
def need_services() -> None:
    r = _skip_reason(("vde2", "mariadb", "galera", "memcached", "rsync", "keystone"))
    if r:
        pytest.skip(r)


def _leftovers(tag: str) -> list[str]:
    """Anything of run ``tag`` still on the machine: namespaces, links, live processes."""
    out: list[str] = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    out += [f"netns {line.split()[0]}" for line in ns.splitlines() if f"ww-{tag}-" in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    out += [f"link {line.split(':')[1].strip()}" for line in links.splitlines()
            if f"ww{tag}h" in line]
    # pgrep -f matches the socket dir /tmp/ww-<tag>/ and run dir; zombies do not count
    pg = subprocess.run(["pgrep", "-a", "-r", "R,S,D,T", "-f", f"ww-{tag}|ww-run-{tag}"],
                        capture_output=True, text=True).stdout
    out += [f"process {line}" for line in pg.splitlines()]
    return out


@pytest.fixture(scope="session")
def leftovers():
    """The function ``leftovers(tag) -> list[str]`` (empty: nothing of the run remains)."""
    return _leftovers
