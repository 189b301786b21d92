"""Database objects per backend: mariadb-operator MariaDB (single or Galera) or CockroachDB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wanwide.core.plan.services import (
    KEYSTONE_DB,
    KEYSTONE_DB_CHARSET,
    KEYSTONE_DB_USER,
    LIVENESS_PERIOD_S,
)
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import meta, obj, svc_host
from wanwide.providers.kubernetes.render.secrets import CREDENTIALS

MARIADB_API = "k8s.mariadb.com/v1alpha1"
CRDB_API = "crdb.cockroachlabs.com/v1alpha1"
MARIADB_NAME = "db"
GALERA_NAME = "galera"
CRDB_NAME = "crdb"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
CRDB_JOB_IMAGE_DEFAULT = "cockroachdb/cockroach"


@dataclass(frozen=True)
class Endpoint:
    """How one region reaches the database."""

    service: str
    namespace: str
    port: int
    scheme: str  # SQLAlchemy scheme for oslo.db

    @property
    def host(self) -> str:
        return svc_host(self.service, self.namespace)


def members(plan: TrialPlan) -> dict[str, str]:
    """Region → database member pod name, for multi-member backends (empty for mariadb)."""
    if plan.backend == "galera":
        return {r: f"{GALERA_NAME}-{i}" for i, r in enumerate(plan.region_names)}
    if plan.backend == "cockroachdb":
        return {r: f"{CRDB_NAME}-{i}" for i, r in enumerate(plan.region_names)}
    return {}


def member_addresses(plan: TrialPlan) -> dict[str, tuple[str, int]]:
    """Galera: each region's member pod by its stable name under mariadb-operator's headless
    ``<name>-internal`` Service, which publishes members that are not ready (non-primary, joining)."""
    if plan.backend != "galera":
        return {}
    return {r: (f"{pod}.{svc_host(GALERA_NAME + '-internal', plan.db_namespace)}", 3306)
            for r, pod in members(plan).items()}


def endpoint(plan: TrialPlan, region: str) -> Endpoint:
    """The database endpoint a region's Keystone uses: the central server or its local member."""
    if plan.backend == "mariadb":
        return Endpoint(MARIADB_NAME, plan.db_namespace, 3306, "mysql+pymysql")
    if plan.backend == "galera":
        return Endpoint(f"{GALERA_NAME}-{region}", plan.db_namespace, 3306, "mysql+pymysql")
    return Endpoint(f"{CRDB_NAME}-{region}", plan.db_namespace, 26257, "cockroachdb")


def _storage(plan: TrialPlan) -> dict[str, Any]:
    if plan.database.in_memory:
        return {"ephemeral": True}
    return {"size": "2Gi"}


def _metrics(plan: TrialPlan) -> dict[str, Any]:
    """mariadb-operator's exporter Deployment and the ServiceMonitor it makes itself (labelled
    ``release: <prometheusRelease>``, its only label setting)."""
    mon = plan.monitoring
    if not mon.enabled:
        return {"enabled": False}
    sm = {"interval": mon.interval}
    if mon.release:
        sm["prometheusRelease"] = mon.release
    return {"enabled": True, "serviceMonitor": sm}


def _mariadb_common(plan: TrialPlan, name: str, region: str | None, replicas: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "rootPasswordSecretKeyRef": {"name": CREDENTIALS, "key": "db-root-password"},
        "replicas": replicas,
        "storage": _storage(plan),
        "myCnf": "[mariadb]\n" + "".join(f"{k}={v}\n" for k, v in plan.database.server.items()),
        "podMetadata": {"labels": plan.labels(region, "database")},
        "metrics": _metrics(plan),
        # No TLS, as in the studies and the lab: mariadb-operator turns it on when not told,
        # which also puts Galera's replication (gcomm) behind TLS.
        "tls": {"enabled": False},
    }
    if plan.spec.database.image:
        spec["image"] = plan.spec.database.image
    if plan.database.probe_timeout_s:  # mariadb-operator keeps its probe and takes the timings given
        spec["livenessProbe"] = {"timeoutSeconds": plan.database.probe_timeout_s}
        spec["readinessProbe"] = {"timeoutSeconds": plan.database.probe_timeout_s}
    sel = plan.node_selector(region) if region else None
    if sel:
        spec["nodeSelector"] = sel
    return spec


def _sql_objects(plan: TrialPlan, ns: str, mariadb: str) -> list[dict[str, Any]]:
    ref = {"mariaDbRef": {"name": mariadb}}
    labels = plan.labels(None, "database")
    return [
        obj(MARIADB_API, "Database", meta(KEYSTONE_DB, ns, labels), spec={**ref, "name": KEYSTONE_DB,
            "characterSet": KEYSTONE_DB_CHARSET[0], "collate": KEYSTONE_DB_CHARSET[1]}),
        obj(MARIADB_API, "User", meta(KEYSTONE_DB_USER, ns, labels), spec={
            **ref,
            "name": KEYSTONE_DB_USER,
            "host": "%",
            "passwordSecretKeyRef": {"name": CREDENTIALS, "key": "keystone-db-password"},
            "maxUserConnections": 0,
        }),
        obj(MARIADB_API, "Grant", meta(KEYSTONE_DB_USER, ns, labels), spec={
            **ref,
            "privileges": ["ALL PRIVILEGES"],
            "database": KEYSTONE_DB,
            "table": "*",
            "username": KEYSTONE_DB_USER,
            "host": "%",
        }),
    ]


def _member_services(plan: TrialPlan, ns: str, port: int, port_name: str) -> list[dict[str, Any]]:
    out = []
    for region, pod in members(plan).items():
        prefix = GALERA_NAME if plan.backend == "galera" else CRDB_NAME
        out.append(
            obj(
                "v1",
                "Service",
                meta(f"{prefix}-{region}", ns, plan.labels(region, "database")),
                spec={
                    "selector": {POD_NAME_LABEL: pod},
                    "ports": [{"name": port_name, "port": port, "targetPort": port}],
                    "publishNotReadyAddresses": False,
                },
            )
        )
    return out


def _mariadb(plan: TrialPlan) -> list[dict[str, Any]]:
    ns = plan.db_namespace
    spec = _mariadb_common(plan, MARIADB_NAME, plan.primary_region, 1)
    return [obj(MARIADB_API, "MariaDB", meta(MARIADB_NAME, ns, plan.labels(plan.primary_region, "database")), spec=spec),
            *_sql_objects(plan, ns, MARIADB_NAME)]


def _galera(plan: TrialPlan) -> list[dict[str, Any]]:
    ns = plan.db_namespace
    db = plan.database
    spec = _mariadb_common(plan, GALERA_NAME, None, len(plan.regions))
    # mariadb-operator refuses ephemeral storage for Galera: PVCs (use a tmpfs-backed
    # StorageClass for the studies' in-memory setting) and an odd-size rule we lift.
    spec["storage"] = {"size": "1Gi"}
    if len(plan.regions) % 2 == 0:
        spec["replicasAllowEvenNumber"] = True
    opts = ";".join(f"{k}={v}" for k, v in db.galera.items())
    spec["galera"] = {
        "enabled": True,
        "primary": {"podIndex": 0, "autoFailover": True},
        "sst": db.galera_sst,
        "replicaThreads": 1,
        "providerOptions": dict(db.galera),
        "recovery": {"enabled": True, "clusterHealthyTimeout": db.cluster_healthy_timeout, "clusterBootstrapTimeout": "10m",
                     "podRecoveryTimeout": "5m", "podSyncTimeout": "5m"},
    }
    spec["podMetadata"]["annotations"] = {"wanwide.io/wsrep-provider-options": opts}
    if db.liveness_failure_threshold != 3:  # cuts planned: a cut-off member is not restarted by its probe
        spec["livenessProbe"] = {"periodSeconds": LIVENESS_PERIOD_S, "timeoutSeconds": db.probe_timeout_s or 5,
                                 "failureThreshold": db.liveness_failure_threshold}
    # One member per region: spread over the placement's label (or nodes) where nodes carry it.
    spec["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": plan.spread_key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": GALERA_NAME}},
        }
    ]
    return [
        obj(MARIADB_API, "MariaDB", meta(GALERA_NAME, ns, plan.labels(None, "database")), spec=spec),
        *_sql_objects(plan, ns, GALERA_NAME),
        *_member_services(plan, ns, 3306, "mysql"),
    ]


def _cockroach(plan: TrialPlan) -> list[dict[str, Any]]:
    ns = plan.db_namespace
    c = plan.spec.database.cockroachdb
    image = plan.spec.database.image or f"{CRDB_JOB_IMAGE_DEFAULT}:{c.version}"
    # v1alpha1 passes additionalArgs to every node, so it cannot give each node its own
    # --locality; region membership comes from the member Services and the chaos selectors
    # (docs/backends.md). CockroachDB is experimental in wanwide.
    cluster = obj(
        CRDB_API,
        "CrdbCluster",
        meta(CRDB_NAME, ns, plan.labels(None, "database")),
        spec={
            "nodes": len(plan.regions),
            "tlsEnabled": False,
            "image": {"name": image},
            "dataStore": {"pvc": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}},
                                           "volumeMode": "Filesystem"}}}
            if not plan.spec.database.in_memory
            else {"pvc": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                   "volumeMode": "Filesystem"}}},
            "additionalArgs": ["--cache=.25", "--max-sql-memory=.25"],
            "additionalLabels": plan.labels(None, "database"),
        },
    )
    sql = (
        f"CREATE DATABASE IF NOT EXISTS {KEYSTONE_DB}; "
        f"CREATE USER IF NOT EXISTS {KEYSTONE_DB_USER}; "
        f"GRANT ALL ON DATABASE {KEYSTONE_DB} TO {KEYSTONE_DB_USER};"
    )
    job = obj(
        "batch/v1",
        "Job",
        meta("crdb-create-keystone", ns, plan.labels(None, "database")),
        spec={
            "backoffLimit": 20,
            "template": {
                "metadata": {"labels": plan.labels(None, "database")},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [
                        {
                            "name": "sql",
                            "image": image,
                            "command": ["cockroach", "sql", "--insecure", f"--host={CRDB_NAME}-public", "-e", sql],
                        }
                    ],
                },
            },
        },
    )
    return [cluster, job, *_member_services(plan, ns, 26257, "grpc")]


def render(plan: TrialPlan) -> list[dict[str, Any]]:
    if plan.backend == "mariadb":
        return _mariadb(plan)
    if plan.backend == "galera":
        return _galera(plan)
    return _cockroach(plan)
