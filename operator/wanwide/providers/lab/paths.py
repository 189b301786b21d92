"""Where hack/install-lab.sh puts things (keep in step with that script)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

VERSITYGW_VERSION = "v1.8.0"


def cache_dir() -> Path:
    return Path(os.environ.get("WANWIDE_CACHE") or Path.home() / ".cache" / "wanwide")


def keystone_venv() -> Path:
    return cache_dir() / "venvs" / "keystone"


def rally_venv() -> Path:
    return cache_dir() / "venvs" / "rally"


def openstack_venv() -> Path:
    """Nova, Placement, Glance and Neutron's server (requirements/openstack.txt)."""
    return cache_dir() / "venvs" / "openstack"


def openstack_bin(name: str) -> Path:
    return openstack_venv() / "bin" / name


def openstack_etc(name: str) -> Path:
    """A file the services' wheels install under the venv's etc/ (``nova/api-paste.ini``…)."""
    return openstack_venv() / "etc" / name


RABBITMQ_SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
"""Debian's rabbitmq-server without its wrapper (which would switch to the rabbitmq user and /var/lib/rabbitmq)."""


def keystone_bin(name: str) -> Path:
    return keystone_venv() / "bin" / name


def rally_bin(name: str = "rally") -> Path:
    return rally_venv() / "bin" / name


def versitygw() -> Path:
    return cache_dir() / "bin" / f"versitygw-{VERSITYGW_VERSION}"


def missing_openstack() -> list[str]:
    """What the lab's Nova, Placement, Glance, Neutron and RabbitMQ need and is not installed (empty: ready)."""
    out = [] if RABBITMQ_SERVER.exists() else ["rabbitmq-server"]
    for name in ("gunicorn", "nova-manage", "nova-conductor", "nova-scheduler", "nova-compute", "placement-manage",
                 "glance-manage", "neutron-db-manage"):
        if not openstack_bin(name).exists():
            out.append(str(openstack_bin(name)))
    return out


def missing() -> list[str]:
    """What the lab needs and is not installed (empty list: ready)."""
    out = []
    for exe in ("mariadbd", "mariadb-install-db", "mariadb", "memcached", "rsync", "ip", "iptables"):
        if not shutil.which(exe):
            out.append(exe)
    if not Path("/usr/lib/galera/libgalera_smm.so").exists():
        out.append("galera-4")
    if not (shutil.which("wirefilter") and shutil.which("vde_switch")):
        out.append("vde2")
    if not (shutil.which("cc") or shutil.which("gcc")):
        out.append("gcc")  # builds the linkemu shaper
    for p in (keystone_bin("keystone-manage"), keystone_bin("gunicorn"),
              keystone_bin("openstack")):
        if not p.exists():
            out.append(str(p))
    if not rally_bin().exists():
        out.append(str(rally_bin()))
    if not versitygw().exists():
        out.append(str(versitygw()))
    return out
