"""prometheus-operator monitors: CockroachDB's metrics, each region's Keystone cache and the Rally runners'
live metrics (pipeline/runner/live.py).

MariaDB and Galera get theirs from mariadb-operator (``metrics.serviceMonitor`` of the
MariaDB object, see :mod:`.database`). Every monitor carries ``spec.monitoring.labels``
under wanwide's own labels, so a Prometheus's monitor selectors find it.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan import names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import meta, obj
from wanwide.providers.kubernetes.render.database import CRDB_NAME

MON_API = "monitoring.coreos.com/v1"


def _labels(plan: TrialPlan, role: str) -> dict[str, str]:
    return {**plan.monitoring.labels, **plan.labels(None, role)}


def render(plan: TrialPlan) -> list[dict[str, Any]]:
    mon = plan.monitoring
    if not mon.enabled:
        return []
    out = []
    if plan.backend == "cockroachdb":
        db_ns = plan.db_namespace
        out.append(obj(MON_API, "ServiceMonitor", meta("database", db_ns, _labels(plan, "database")), spec={
            "selector": {"matchLabels": {"app.kubernetes.io/instance": CRDB_NAME}},
            "namespaceSelector": {"matchNames": [db_ns]},
            "endpoints": [{"port": "http", "path": "/_status/vars", "interval": mon.interval}],
        }))
    if plan.keystone.cache:
        nss = [plan.namespace(r) for r in plan.region_names]
        out.append(obj(MON_API, "PodMonitor", meta("keystone-cache", nss[0], _labels(plan, "cache")), spec={
            "selector": {"matchLabels": {names.L_TRIAL: plan.name, names.L_ROLE: "cache"}},
            "namespaceSelector": {"matchNames": nss},
            "podMetricsEndpoints": [{"port": "metrics", "interval": mon.interval}],
        }))
    load = [plan.namespace(r) for r in plan.load_regions]
    out.append(obj(MON_API, "PodMonitor", meta("rally", load[0], _labels(plan, "load")), spec={
        "selector": {"matchLabels": {names.L_TRIAL: plan.name, names.L_ROLE: "load"}},
        "namespaceSelector": {"matchNames": load},
        "podMetricsEndpoints": [{"port": "metrics", "interval": mon.interval, "honorLabels": True}],
    }))
    return out
