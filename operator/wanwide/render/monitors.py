"""prometheus-operator monitors: database metrics and each region's Keystone cache."""

from __future__ import annotations

from typing import Any

from ..plan import names
from ..plan.trial import TrialPlan
from .common import meta, obj
from .database import CRDB_NAME

MON_API = "monitoring.coreos.com/v1"


def render(plan: TrialPlan) -> list[dict[str, Any]]:
    if not plan.spec.monitoring.enabled:
        return []
    out = []
    db_ns = plan.db_namespace
    if plan.backend in ("mariadb", "galera"):
        # mariadb-operator's metrics exporter (metrics.enabled) serves on the port named "metrics".
        out.append(obj(MON_API, "PodMonitor", meta("database", db_ns, plan.labels(None, "database")), spec={
            "selector": {"matchLabels": {names.L_TRIAL: plan.name, names.L_ROLE: "database"}},
            "namespaceSelector": {"matchNames": [db_ns]},
            "podMetricsEndpoints": [{"port": "metrics", "interval": "15s"}],
        }))
    else:
        out.append(obj(MON_API, "ServiceMonitor", meta("database", db_ns, plan.labels(None, "database")), spec={
            "selector": {"matchLabels": {"app.kubernetes.io/instance": CRDB_NAME}},
            "namespaceSelector": {"matchNames": [db_ns]},
            "endpoints": [{"port": "http", "path": "/_status/vars", "interval": "15s"}],
        }))
    if plan.spec.openstack.keystone.cache:
        nss = [plan.namespace(r) for r in plan.region_names]
        out.append(obj(MON_API, "PodMonitor", meta("keystone-cache", nss[0], plan.labels(None, "cache")), spec={
            "selector": {"matchLabels": {names.L_TRIAL: plan.name, names.L_ROLE: "cache"}},
            "namespaceSelector": {"matchNames": nss},
            "podMetricsEndpoints": [{"port": "metrics", "interval": "15s"}],
        }))
    return out
