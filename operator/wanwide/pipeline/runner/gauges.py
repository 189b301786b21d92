"""Gauges taken around a Rally run: database statement counters and TCP RTT."""

from __future__ import annotations

import math
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wanwide.core.contracts import DatabaseGauge, RttTarget
from wanwide.core.errors import PermanentError
from wanwide.core.lifecycle.network import median
from wanwide.pipeline.runner import probe

COUNTERS = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_replace")
WRITE_COUNTERS = ("Com_insert", "Com_update", "Com_delete", "Com_replace")
MYSQL_BACKENDS = {"mariadb", "galera", "mysql"}


class GaugeError(PermanentError, RuntimeError):
    pass


def read_db_counters(db: DatabaseGauge, timeout: float = 10.0) -> dict[str, int]:
    """``Com_*`` statement counters from ``information_schema.GLOBAL_STATUS`` (server-wide)."""
    if db.backend.lower() not in MYSQL_BACKENDS:
        raise GaugeError(f"statement counters are read on MariaDB/Galera only, not {db.backend!r}")
    import pymysql

    password = os.environ.get(db.password_env, "")
    try:
        conn = pymysql.connect(
            host=db.host, port=db.port, user=db.user, password=password,
            connect_timeout=timeout, read_timeout=timeout, autocommit=True,
        )
    except pymysql.MySQLError as e:
        raise GaugeError(f"cannot connect to {db.backend} at {db.host}:{db.port} as {db.user}: {e}") from e
    try:
        with conn.cursor() as cur:
            names = ",".join(f"'{c.upper()}'" for c in COUNTERS)
            cur.execute(
                "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                f"WHERE VARIABLE_NAME IN ({names})"
            )
            got = {str(k).upper(): int(v) for k, v in cur.fetchall()}
    finally:
        conn.close()
    return {c: got.get(c.upper(), 0) for c in COUNTERS}


def diff_counters(before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """reads = Com_select, writes = insert+update+delete+replace, as in the studies.

    The gauge's own ``SELECT`` on GLOBAL_STATUS is counted by the server: one is
    subtracted so that an idle interval reads as zero.
    """
    delta = {c: after.get(c, 0) - before.get(c, 0) for c in COUNTERS}
    delta["Com_select"] = max(0, delta["Com_select"] - 1)
    reads = delta["Com_select"]
    writes = sum(delta[c] for c in WRITE_COUNTERS)
    total = reads + writes
    return {
        "reads": reads,
        "writes": writes,
        "read_pct": round(100.0 * reads / total, 2) if total else None,
        "write_pct": round(100.0 * writes / total, 2) if total else None,
        "counters": {"before": before, "after": after, "delta": delta},
    }


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (same as numpy's default), q in [0, 100]."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def measure_rtt(
    src_region: str, targets: list[RttTarget], samples: int, timeout: float = 5.0, pause_s: float = 0.05
) -> list[dict[str, Any]]:
    """RTT samples to each target with the one probe (pipeline/runner/probe.py: a refused connection is an answer);
    the targets at once (up to 16), each target's samples one after the other: at 300 ms RTT the 90 targets
    of 45 regions took 4.5 min one by one."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(targets)))) as pool:
        answers = list(pool.map(lambda t: probe.samples_ms(t.host, t.port, samples, pause_s, timeout), targets))
    out: list[dict[str, Any]] = []
    for t, vals in zip(targets, answers, strict=True):
        lost = samples - len(vals)
        out.append({
            "src": src_region,
            "dst": t.region,
            "kind": t.kind,
            "host": t.host,
            "port": t.port,
            "method": "tcp-connect",
            "samples_ms": vals,
            "median_ms": round(median(vals), 3) if vals else None,  # the network check's own median
            "p95_ms": round(percentile(vals, 95), 3) if vals else None,
            "errors": lost,
            "sent": samples,
            "lost": lost,
            "loss_pct": round(100.0 * lost / samples, 2) if samples else None,
            "first_error": f"{lost} of {samples} unanswered within {timeout:g} s" if lost else None,
        })
    return out


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def cpu_model(cpuinfo: str) -> str | None:
    """The first ``model name`` of /proc/cpuinfo (x86; other architectures may have none)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def host_info() -> dict[str, Any]:
    """The machine the run measured on: its name, CPUs and load, and what tells one machine (or boot) from
    another when hostnames repeat (a campaign's sittings may land on new machines of the same kind): the
    CPU model and the kernel's boot id (the node's, also in a pod: /proc/sys/kernel is not namespaced)."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(), "loadavg": load,
            "cpu_model": cpu_model(_read("/proc/cpuinfo")),
            "boot_id": _read("/proc/sys/kernel/random/boot_id").strip() or None}
