"""The databases of the control planes' services (pure): mariadb-operator objects, as Keystone's.

Each service's schemas are where the plan puts them (core/plan/controlplane.py ``DatabaseAt``):

- ``local``: a MariaDB of the control plane's own, ``osdb``, in the namespace of the region the service runs in
  (stage ``openstack-db``), with a Database per schema, the service's User and a Grant on each schema;
- ``shared``: Databases, User and Grants on the trial's database (spec.database: the central MariaDB or the
  Galera cluster; stage ``database``), as Keystone's.

The users' passwords are the services' generated ones (``<service>-password``, copied into every trial namespace
with the others: render/secrets.py). CockroachDB as the shared database is not rendered here: Nova, Placement and
Glance run on MySQL only (the planner says so).
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan.services import KEYSTONE_DB_CHARSET
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import openstack as osr
from wanwide.providers.kubernetes.render.common import meta, obj
from wanwide.providers.kubernetes.render.database import (
    GALERA_NAME,
    MARIADB_API,
    MARIADB_NAME,
    _mariadb_common,
)
from wanwide.providers.kubernetes.render.secrets import CREDENTIALS

ROLE = "openstack-db"


def _name(schema: str) -> str:
    return schema.replace("_", "-")


def _schemas(plan: TrialPlan, place: str) -> dict[tuple[str, str], set[str]]:
    """(namespace, service) → its schemas there, for the databases at ``place`` (local | shared)."""
    cp = plan.control_plane
    out: dict[tuple[str, str], set[str]] = {}
    if cp is None:
        return out
    for p in cp.planes:
        for service, at in p.databases.items():
            if at.place != place:
                continue
            ns = plan.namespace(at.region) if place == "local" else plan.db_namespace
            out.setdefault((ns, service), set()).update(at.schemas)
    return out


def _sql(plan: TrialPlan, ns: str, service: str, schemas: set[str], mariadb: str,
         region: str | None) -> list[dict[str, Any]]:
    ref = {"mariaDbRef": {"name": mariadb}}
    labels = plan.labels(region, "database" if region is None else ROLE)
    out = [obj(MARIADB_API, "Database", meta(_name(s), ns, labels), spec={
        **ref, "name": s, "characterSet": KEYSTONE_DB_CHARSET[0], "collate": KEYSTONE_DB_CHARSET[1]})
        for s in sorted(schemas)]
    out.append(obj(MARIADB_API, "User", meta(service, ns, labels), spec={
        **ref, "name": service, "host": "%", "maxUserConnections": 0,
        "passwordSecretKeyRef": {"name": CREDENTIALS, "key": osr.PASSWORD_KEYS[service]}}))
    out += [obj(MARIADB_API, "Grant", meta(f"{service}-{_name(s)}", ns, labels), spec={
        **ref, "privileges": ["ALL PRIVILEGES"], "database": s, "table": "*", "username": service, "host": "%"})
        for s in sorted(schemas)]
    return out


def local(plan: TrialPlan) -> list[dict[str, Any]]:
    """The control planes' own MariaDBs and their schemas (stage ``openstack-db``)."""
    region_of = {plan.namespace(r): r for r in plan.region_names}
    out: list[dict[str, Any]] = []
    made: set[str] = set()
    for (ns, service), schemas in sorted(_schemas(plan, "local").items()):
        region = region_of[ns]
        if ns not in made:
            made.add(ns)
            spec = _mariadb_common(plan, osr.OSDB, region, 1)
            spec["podMetadata"] = {"labels": plan.labels(region, ROLE)}  # its own role: its ingress is the links'
            out.append(obj(MARIADB_API, "MariaDB", meta(osr.OSDB, ns, plan.labels(region, ROLE)), spec=spec))
        out += _sql(plan, ns, service, schemas, osr.OSDB, region)
    return out


def shared(plan: TrialPlan) -> list[dict[str, Any]]:
    """The services' schemas on the trial's database (stage ``database``); none on CockroachDB."""
    if plan.backend not in ("mariadb", "galera"):
        return []
    mariadb = MARIADB_NAME if plan.backend == "mariadb" else GALERA_NAME
    return [o for (ns, service), schemas in sorted(_schemas(plan, "shared").items())
            for o in _sql(plan, ns, service, schemas, mariadb, None)]


def render(plan: TrialPlan) -> list[dict[str, Any]]:
    return [*local(plan), *shared(plan)]


__all__ = ["local", "render", "shared"]
