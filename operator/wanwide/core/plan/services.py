"""What every region's services run with: the database and Keystone settings. Pure.

The plan decides these once; the Kubernetes provider writes them into the
MariaDB object and the chart's values, the lab into my.cnf and keystone.conf.
Only where a process lives (addresses, directories, sockets) is the provider's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from wanwide.core.api.benchmark import BenchmarkSpec
from wanwide.core.api.units import seconds

KEYSTONE_DB = "keystone"
KEYSTONE_DB_USER = "keystone"
KEYSTONE_DB_CHARSET = ("utf8mb3", "utf8mb3_general_ci")
CACHE_BACKEND = "dogpile.cache.pymemcache"
MEMCACHED_PORT = 11211
MEMCACHED_MEMORY_MB = 256
MEMCACHED_CONNECTIONS = 4096

SERVER_OPTIONS = {
    "max_connections": "2000",
    "innodb_flush_log_at_trx_commit": "2",
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
}
"""MariaDB server options of every backend built on it (my.cnf ``[mariadb]``)."""

GALERA_FC_LIMIT = "64"
GALERA_DYNAMIC_OPTIONS = ("evs.send_window", "evs.user_send_window")
"""Provider options Galera changes at run time (SET GLOBAL wsrep_provider_options)."""

GALERA_DEFAULTS = {"evs.send_window": "4", "evs.user_send_window": "2"}
"""Galera 4's own values of the dynamic options (set back when a trial asks for none)."""
GALERA_SEND_WINDOWS = {"evs.send_window": "512", "evs.user_send_window": "256"}
"""The send windows every trial runs with, at every RTT (``galera_wan_options``)."""


MEMBERS_AT_DEFAULTS = 10  # up to this many members the timeouts below are the RTT's alone


def galera_wan_options(max_rtt_ms: float, members: int = 3) -> dict[str, str]:
    """evs/gmcast timeouts that survive the largest RTT (Galera's defaults assume a LAN) and the cluster's
    size: a view change (a member joining, leaving) costs every member a round of messages about every
    other, and keepalives go from every member to every other, so beyond ``MEMBERS_AT_DEFAULTS`` members
    the gossip slows down (keepalives, join retransmissions, inactivity checks) and the verdicts wait
    longer (a joiner's wait for a primary view, a view's install, suspicion, a silent peer). At 45
    members on 2 cores with the defaults a joiner ran out of its 30 s ``pc.wait_prim_timeout``, and the
    cluster's own chatter took both cores until peers timed out of each other. Failure detection is
    slower for it; replication is not.

    The keepalives are most of an idle cluster's traffic and it grows faster than n²: each round cost
    every member ≈ 150 frames at 10 members, ≈ 830 at 20, ≈ 3,000–4,400 at 45 (measured through the lab's
    links, docs/lab-layout.md): with a keepalive every 3 s a 45-member cluster's idle gossip alone would be
    ≈ 45,000–66,000 frames/s (a 33-member one collapsed on 2 cores). So the period grows as (n/15)²
    (9 s at 45: 15,000–22,000 frames/s measured) and the suspicion it bounds (Galera wants
    keepalive < suspect/3) with it.

    Wider send windows at every RTT (the defaults, 4 and 2 messages in flight, throttle replication over a
    WAN): the same at 0 ms as at 300 ms, so a delay's effect is the delay's and not the window's too (they
    were the defaults below 20 ms until issue 46; docs/results-study.md, "Galera's send window"). A
    Benchmark sweeps the window as its own parameter with ``spec.database.galera.providerOptions``.
    """
    rtt_s = max_rtt_ms / 1000.0
    n = members if members > MEMBERS_AT_DEFAULTS else 0
    keepalive = max(1.0, 3 * rtt_s, (n / 15) ** 2)
    suspect = max(5.0, 30 * rtt_s, n / 2, 3.5 * keepalive if n else 0)

    def iso(s: float) -> str:
        return f"PT{max(round(s, 2), 0.5):g}S"

    opts = {
        "evs.keepalive_period": iso(keepalive),
        "evs.suspect_timeout": iso(suspect),
        "evs.inactive_timeout": iso(max(15.0, 60 * rtt_s, 1.5 * n, 2 * suspect if n else 0)),
        "evs.install_timeout": iso(max(15.0, 60 * rtt_s, 1.5 * n)),
        "evs.join_retrans_period": iso(max(1.0, 2 * rtt_s, n / 15)),
        "gmcast.peer_timeout": iso(max(3.0, 20 * rtt_s, n / 3, 2.5 * keepalive if n else 0)),
        "pc.wait_prim_timeout": iso(max(30.0, 100 * rtt_s, 3 * n)),
    }
    if members > MEMBERS_AT_DEFAULTS:  # Galera checks for inactive members every 0.5 s by default
        opts["evs.inactive_check_period"] = iso(n / 30)
    return opts | GALERA_SEND_WINDOWS


@dataclass(frozen=True)
class DatabaseConfig:
    """The database of a trial: backend, server options, Galera provider options."""

    backend: str
    in_memory: bool
    server: dict[str, str]
    galera: dict[str, str]  # wsrep_provider_options (empty unless galera)
    galera_sst: str = "rsync"
    cluster_healthy_timeout: str = "30s"
    # a member's liveness probe (every LIVENESS_PERIOD_S): how many failures restart it
    liveness_failure_threshold: int = 3
    # the probes' timeout (spec.database.probeTimeout); None: the database operator's default
    probe_timeout_s: int | None = None

    @property
    def galera_dynamic(self) -> dict[str, str]:
        """The dynamic Galera options a trial runs with (Galera's defaults where it sets none)."""
        if self.backend != "galera":
            return {}
        return {k: self.galera.get(k, GALERA_DEFAULTS[k]) for k in GALERA_DYNAMIC_OPTIONS}

    @property
    def galera_static(self) -> dict[str, str]:
        return {k: v for k, v in self.galera.items() if k not in GALERA_DYNAMIC_OPTIONS}


LIVENESS_PERIOD_S = 10
REJOIN_MARGIN_S = 120  # a member back from a cut rejoins (IST) and syncs within this, on this machine


def database_config(spec: BenchmarkSpec, backend: str, max_rtt_ms: float, longest_cut_s: float = 0.0,
                    members: int = 3) -> DatabaseConfig:
    """The database of a trial. A fault window measures the database, not its operator: with cuts in
    the plan, a cut-off Galera member (non-primary, its liveness failing) is not restarted during the
    cut, and mariadb-operator does not start a cluster recovery before the cut is over and the member
    has had ``REJOIN_MARGIN_S`` to rejoin (docs/backends.md, "Faults and the database operator")."""
    g = spec.database.galera
    galera: dict[str, str] = {}
    if backend == "galera":
        galera = {"gcs.fc_limit": GALERA_FC_LIMIT, **galera_wan_options(max_rtt_ms, members),
                  **(g.provider_options or {})}
    healthy_s = max(30, int(max_rtt_ms * 0.3), math.ceil(longest_cut_s + REJOIN_MARGIN_S) if longest_cut_s else 0)
    return DatabaseConfig(
        backend=backend,
        in_memory=spec.database.in_memory,
        server=dict(SERVER_OPTIONS),
        galera=dict(sorted(galera.items())),
        galera_sst=g.sst,
        cluster_healthy_timeout=g.cluster_healthy_timeout or f"{healthy_s}s",
        liveness_failure_threshold=max(3, math.ceil((longest_cut_s + REJOIN_MARGIN_S) / LIVENESS_PERIOD_S))
        if longest_cut_s else 3,
        probe_timeout_s=math.ceil(seconds(spec.database.probe_timeout)) if spec.database.probe_timeout else None,
    )


@dataclass(frozen=True)
class KeystoneConfig:
    """keystone.conf as every region runs it, but for addresses (filled in by the provider)."""

    cache: bool
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Keystone server processes per region (spec.openstack.keystone.replicas): Kubernetes runs as many
    # keystone-api pods, each the chart's one WSGI process and thread; the lab as many gunicorn workers.
    # Memory for concurrency: each is a Keystone of its own (~100 MB).
    processes: int = 1

    def cache_section(self, memcache_servers: list[str]) -> dict[str, Any]:
        """``[cache]`` for a region whose memcached listens at ``memcache_servers``."""
        if not self.cache:
            return {"enabled": False}
        return {"enabled": True, "backend": CACHE_BACKEND, "memcache_servers": ",".join(memcache_servers),
                "expiration_time": 600}

    def conf(self, memcache_servers: list[str]) -> dict[str, dict[str, Any]]:
        """Every section wanwide sets, the region's ``[cache]`` included."""
        return {**self.sections, "cache": self.cache_section(memcache_servers)}


KEYSTONE_SECTIONS: dict[str, dict[str, Any]] = {
    "DEFAULT": {"max_token_size": 255},
    "token": {"provider": "fernet"},
    "database": {"max_pool_size": 20, "max_overflow": 40, "pool_timeout": 60, "connection_recycle_time": 600},
    "oslo_messaging_notifications": {"driver": "noop"},
}
"""keystone.conf settings of every region, whatever the provider (``[cache]`` comes from :class:`KeystoneConfig`)."""


def keystone_config(spec: BenchmarkSpec) -> KeystoneConfig:
    return KeystoneConfig(cache=spec.openstack.keystone.cache,
                          sections={k: dict(v) for k, v in KEYSTONE_SECTIONS.items()},
                          processes=spec.openstack.keystone.replicas)
