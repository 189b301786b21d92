"""What every openstack-helm service chart of a trial's control plane is told alike (pure): where Keystone, the
database, the bus and the other services of its plane are, with which users, and where its pods go.

The plan says where each service runs (core/plan/controlplane.py: a plane per region in shape ``regions``, one in
``stretched``); this module turns that into helm-toolkit's ``endpoints`` (each a Service name, its namespace and
port: cluster DNS), ``labels`` (node selectors) and ``images``. Each service's own module (``rabbitmq``,
``placement``, ``glance``, ``nova``) adds its manifests and configuration. A service's Keystone user, database user
and bus user share one generated password (``<service>-password`` in the Benchmark's key Secret).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wanwide.core.contracts import CATALOG_TYPES
from wanwide.core.plan.controlplane import ControlPlane, DatabaseAt, Plane
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import PLACEHOLDER, deep_merge
from wanwide.providers.kubernetes.render.database import endpoint as trial_database
from wanwide.providers.kubernetes.render.keystone import API_PORT as KEYSTONE_PORT
from wanwide.providers.kubernetes.render.keystone import API_SERVICE as KEYSTONE_SERVICE
from wanwide.providers.kubernetes.render.keystone import MEMCACHED, HelmRelease
from wanwide.providers.kubernetes.render.secrets import SERVICE_PASSWORD

OSDB = "osdb"  # a control plane's own MariaDB (database: local), in the region it runs in
OSDB_PORT = 3306
BUS_SERVICE = "rabbitmq"  # the rabbitmq chart's Service (endpoints.oslo_messaging.hosts.default)
BUS_RELEASE = "rabbitmq"
BUS_STATEFULSET = f"{BUS_RELEASE}-rabbitmq"  # the chart names it <release>-rabbitmq
AMQP_PORT, BUS_HTTP_PORT = 5672, 15672
APIS = {  # endpoint name in helm-toolkit → (Service, port, path)
    "placement": ("placement-api", 8778, "/"),
    "image": ("glance-api", 9292, None),
    "compute": ("nova-api", 8774, "/v2.1/"),
    "network": ("neutron-server", 9696, None),
}
SERVICE_OF = {t: s for s, t in CATALOG_TYPES.items()}  # catalog type (helm-toolkit's endpoint name) → service
PASSWORD_KEYS = SERVICE_PASSWORD
"""The generated password of each service (its Keystone, database and bus user; the bus's admin and Erlang cookie)."""


def control(plan: TrialPlan) -> ControlPlane:
    cp = plan.control_plane
    if cp is None:
        raise ValueError(f"trial {plan.name} has no control plane (the planner sets one for every trial)")
    return cp


def password(pw: dict[str, str] | None, service: str) -> str:
    return (pw or {}).get(PASSWORD_KEYS[service], PLACEHOLDER)


def planes_at(plan: TrialPlan, service: str) -> list[tuple[str, Plane]]:
    """(region, plane): every place ``service`` runs, one per plane (nova-compute: every region with computes)."""
    cp = control(plan)
    if service not in cp.services:
        return []
    return [(p.where[service], p) for p in cp.planes]


KS_ENDPOINTS_AFTER = {"placement": ["placement-ks-user"], "glance": [], "neutron": [], "nova": []}
"""What each chart's ``ks-endpoints`` Job waits for besides its ``ks-service`` Job (openstack-helm 2026.1.0's
``dependencies.static.ks_endpoints.jobs``; tests/test_nova_render.py checks it against the mirrored charts)."""


def one_service_entry(service: str, first: bool) -> dict[str, Any]:
    """Values that keep a catalog service (the entity of a type, not its endpoints) made once for the trial's one
    identity database: every plane's release but the first leaves its ``ks-service`` Job out, and its
    ``ks-endpoints`` Job stops waiting for it (it retries until the first plane's has made the service). Three
    planes of shape regions each making theirs at once made three services of one type, and every ``ks-endpoints``
    Job then failed on the ambiguous lookup (stop 60, the real node)."""
    if first or service not in KS_ENDPOINTS_AFTER:
        return {}
    return {"manifests": {"job_ks_service": False},
            "dependencies": {"static": {"ks_endpoints": {"jobs": KS_ENDPOINTS_AFTER[service]}}}}


def plane_releases(plan: TrialPlan, service: str, key: str, release: str,
                   values_of: Callable[[str, Plane], dict[str, Any]],
                   patches: tuple[dict[str, Any], ...] = ()) -> list[HelmRelease]:
    """One release of ``spec.openstack.<key>``'s chart per plane, in the region where ``service`` runs in it; the
    service's catalog entity made by the first plane's only (:func:`one_service_entry`)."""
    s = getattr(plan.spec.openstack, key)
    return [HelmRelease(name=release, namespace=plan.namespace(r), region=r, repo=s.chart_repo, chart=s.chart,
                        version=s.chart_version, values=deep_merge(values_of(r, p), one_service_entry(service, i == 0)),
                        wave=0, field=f"spec.openstack.{key}", patches=patches)
            for i, (r, p) in enumerate(planes_at(plan, service))]


def node_labels(plan: TrialPlan, region: str, components: tuple[str, ...]) -> dict[str, Any]:
    """helm-toolkit's ``labels``: every component (and its jobs) on the region's nodes (the chart takes one key and
    value; without a placement, one every Linux node has)."""
    sel = plan.node_selector(region)
    key, val = next(iter(sel.items())) if sel else ("kubernetes.io/os", "linux")
    return {c: {"node_selector_key": key, "node_selector_value": val} for c in components}


def identity(plan: TrialPlan, at: str, plane: Plane, pw: dict[str, str] | None,
             users: dict[str, str]) -> dict[str, Any]:
    """``endpoints.identity``: the Keystone of region ``at`` (the region the pods run in: each region has its own,
    over the trial's one identity database) and the Keystone users the chart makes or uses (``users``: the chart's
    auth key → the service whose user and password it is). Everything is registered in the catalog under the
    plane's region, so every user looks its services up there."""
    admin_pw = (pw or {}).get("admin-password", PLACEHOLDER)
    auth: dict[str, Any] = {"admin": {"region_name": plane.name, "username": "admin", "password": admin_pw,
                                      "project_name": "admin", "user_domain_name": "default",
                                      "project_domain_name": "default"}}
    for key, service in users.items():
        auth[key] = {"region_name": plane.name, "username": service if key == service else f"{service}_{key}",
                     "password": password(pw, service), "project_name": "service",
                     "user_domain_name": "service", "project_domain_name": "service", "role": "admin,service"}
    return {
        "namespace": plan.namespace(at),
        "name": "keystone",
        "auth": auth,
        "hosts": {"default": KEYSTONE_SERVICE, "internal": KEYSTONE_SERVICE},
        "host_fqdn_override": {"default": None},
        "path": {"default": "/v3"},
        "scheme": {"default": "http"},
        "port": {"api": {"default": KEYSTONE_PORT, "public": KEYSTONE_PORT, "internal": KEYSTONE_PORT,
                         "admin": KEYSTONE_PORT}},
    }


def api(plan: TrialPlan, name: str, plane: Plane) -> dict[str, Any]:
    """``endpoints.<name>`` (placement, image, compute, network): the plane's service, public and internal alike (what
    the catalog says is what Rally and the other services reach: the Service inside the cluster)."""
    service, port, path = APIS[name]
    ns = plan.namespace(plane.where.get(SERVICE_OF[name], plane.name))
    return {
        "namespace": ns,
        "hosts": {"default": service, "public": service, "internal": service},
        "host_fqdn_override": {"default": None},
        "path": {"default": path},
        "scheme": {"default": "http", "service": "http"},
        "port": {"api": {"default": port, "public": port, "internal": port, "admin": port, "service": port}},
    }


def database_of(plan: TrialPlan, at: DatabaseAt) -> tuple[str, str, int, str]:
    """(Service, namespace, port, SQLAlchemy scheme) of where a service's schemas are."""
    if at.place == "local":
        return OSDB, plan.namespace(at.region), OSDB_PORT, "mysql+pymysql"
    db = trial_database(plan, at.region)
    return db.service, db.namespace, db.port, db.scheme


def oslo_db(plan: TrialPlan, at: DatabaseAt, schema: str, service: str, pw: dict[str, str] | None,
            user_key: str | None = None) -> dict[str, Any]:
    """``endpoints.oslo_db*``: one schema of a service, its user (``user_key``: the chart's key for it)."""
    svc, ns, port, scheme = database_of(plan, at)
    root = (pw or {}).get("db-root-password", PLACEHOLDER)
    return {
        "namespace": ns,
        "hosts": {"default": svc},
        "host_fqdn_override": {"default": None},
        "path": f"/{schema}",
        "scheme": scheme,
        "port": {"mysql": {"default": port}},
        "auth": {"admin": {"username": "root", "password": root},
                 user_key or service: {"username": service, "password": password(pw, service)}},
    }


def oslo_messaging(plan: TrialPlan, plane: Plane, pw: dict[str, str] | None, user: str | None) -> dict[str, Any]:
    """``endpoints.oslo_messaging``: the plane's bus, a vhost and user per service (``user``; None: the bus's own
    values)."""
    cp = control(plan)
    replicas = plan.spec.openstack.messaging.replicas
    out: dict[str, Any] = {
        "namespace": plan.namespace(plane.where["messaging"]) if "messaging" in cp.services else None,
        "hosts": {"default": BUS_SERVICE},
        "host_fqdn_override": {"default": None},
        "scheme": "rabbit",
        "port": {"amqp": {"default": AMQP_PORT}, "http": {"default": BUS_HTTP_PORT}},
        "statefulset": {"replicas": replicas, "name": BUS_STATEFULSET},
        "auth": {"admin": {"username": "rabbitmq", "password": password(pw, "messaging")}},
    }
    if user is not None:
        out["path"] = f"/{user}"
        out["auth"][user] = {"username": user, "password": password(pw, user)}
    return out


def oslo_cache(plan: TrialPlan, at: str) -> dict[str, Any]:
    """``endpoints.oslo_cache``: the region's memcached (Keystone's; keystonemiddleware caches tokens there)."""
    return {"namespace": plan.namespace(at), "hosts": {"default": MEMCACHED}, "host_fqdn_override": {"default": None}}


def images(tags: dict[str, str], keystone_image: str | None, same_as: dict[str, str] | None = None) -> dict[str, Any]:
    """The values' ``images`` entry (spread into a chart's values): ``images.tags``, the Benchmark's overrides; the
    Keystone jobs (ks-user, ks-service, ks-endpoints) run the openstack client, which the keystone image given for
    Keystone's bootstrap carries; ``same_as``: chart tags that run the image given for another (tag → that one).
    Empty when nothing is overridden (the chart's own images)."""
    out = dict(tags)
    if keystone_image:
        for k in ("ks_user", "ks_service", "ks_endpoints"):
            out.setdefault(k, keystone_image)
    for k, source in (same_as or {}).items():
        if source in out:
            out.setdefault(k, out[source])
    return {"images": {"tags": out}} if out else {}


def keystone_client_image(plan: TrialPlan) -> str | None:
    return plan.spec.openstack.keystone.images.bootstrap


__all__ = ["APIS", "AMQP_PORT", "BUS_RELEASE", "BUS_SERVICE", "BUS_STATEFULSET", "OSDB", "PASSWORD_KEYS", "api",
           "control", "database_of", "identity", "images", "keystone_client_image", "node_labels", "oslo_cache",
           "oslo_db", "oslo_messaging", "password", "planes_at"]
