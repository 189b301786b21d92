"""Keystone per region: an openstack-helm ``keystone`` release plus a memcached."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from wanwide.core.plan import names
from wanwide.core.plan.services import (
    KEYSTONE_DB,
    KEYSTONE_DB_USER,
    MEMCACHED_CONNECTIONS,
    MEMCACHED_MEMORY_MB,
    MEMCACHED_PORT,
)
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import PLACEHOLDER, deep_merge, meta, obj, svc_host
from wanwide.providers.kubernetes.render.database import endpoint

RELEASE = "keystone"
API_SERVICE = "keystone-api"
API_PORT = 5000
MEMCACHED = "memcached"
MEMCACHED_IMAGE = "docker.io/library/memcached:1.6.38"
MEMCACHED_EXPORTER_IMAGE = "quay.io/prometheus/memcached-exporter:v0.15.3"


@dataclass(frozen=True)
class HelmRelease:
    """A chart release: rendered with ``helm template`` and applied by the operator, hooks in order
    (:mod:`.chart`); helm keeps no release record."""

    name: str
    namespace: str
    region: str
    repo: str
    chart: str
    version: str
    values: dict[str, Any]
    wave: int  # releases of wave 0 are applied, and their hook Jobs (db-sync) awaited, before wave 1
    field: str = "spec.openstack.keystone"  # where the Benchmark names this chart (messages name it)
    # JSON patches (RFC 6902: test, add, replace, remove) of rendered objects, each {"kind", "name", "ops"}: what no
    # value of the chart can change (render/chart.py ``patched``)
    patches: tuple[dict[str, Any], ...] = ()

    @cached_property
    def digest(self) -> str:
        """What the rendering depends on, hashed (the release's identity, chart and values)."""
        what: list[Any] = [self.name, self.namespace, self.repo, self.chart, self.version, self.values]
        if self.patches:
            what.append(list(self.patches))
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()

    def document(self) -> dict[str, Any]:
        """How ``wanwide plan`` shows it: clearly not a Kubernetes object."""
        return {
            "helmRelease": {
                "name": self.name,
                "namespace": self.namespace,
                "region": self.region,
                "repo": self.repo,
                "chart": self.chart,
                "version": self.version,
                "wave": self.wave,
                "render": f"helm template {self.name} {self.chart}"
                + (f" --repo {self.repo} --version {self.version}" if self.repo else "")
                + f" --namespace {self.namespace} -f values.yaml (then applied server-side, hooks in order)",
                "values": self.values,
                **({"patches": list(self.patches)} if self.patches else {}),
            }
        }


def public_url(plan: TrialPlan, region: str) -> str:
    return f"http://{svc_host(API_SERVICE, plan.namespace(region))}:{API_PORT}/v3"


def memcache_servers(plan: TrialPlan, region: str) -> list[str]:
    """The region's memcached, as Keystone's ``[cache] memcache_servers`` names it."""
    if not plan.keystone.cache:
        return []
    return [f"{svc_host(MEMCACHED, plan.namespace(region))}:{MEMCACHED_PORT}"]


def values(plan: TrialPlan, region: str, passwords: dict[str, str] | None = None) -> dict[str, Any]:
    """Chart values for one region (wanwide's, then the user's ``values`` on top)."""
    pw = passwords or {}
    ks = plan.spec.openstack.keystone
    ns = plan.namespace(region)
    db = endpoint(plan, region)
    sel = plan.node_selector(region)
    # The chart takes one key/value; without placement, one every Linux node has.
    sel_key, sel_val = next(iter(sel.items())) if sel else ("kubernetes.io/os", "linux")
    images = {k: v for k, v in ks.images.model_dump(exclude_none=True).items() if k != "memcached"}
    v: dict[str, Any] = {
        "endpoints": {
            "oslo_db": {
                "namespace": db.namespace,
                "hosts": {"default": db.service},
                "host_fqdn_override": {"default": db.host},
                "path": f"/{KEYSTONE_DB}",
                "scheme": db.scheme,
                "port": {"mysql": {"default": db.port}},
                "auth": {
                    "admin": {"username": "root", "password": pw.get("db-root-password", PLACEHOLDER)},
                    "keystone": {"username": KEYSTONE_DB_USER, "password": pw.get("keystone-db-password", PLACEHOLDER)},
                },
            },
            "oslo_cache": {"namespace": ns, "hosts": {"default": MEMCACHED}},
            "identity": {
                "namespace": ns,
                "name": "keystone",
                "auth": {
                    "admin": {
                        "region_name": region,
                        "username": "admin",
                        "password": pw.get("admin-password", PLACEHOLDER),
                        "project_name": "admin",
                        "user_domain_name": "default",
                        "project_domain_name": "default",
                    }
                },
                "hosts": {"default": API_SERVICE, "internal": API_SERVICE},
                "host_fqdn_override": {"default": None},
                "path": {"default": "/v3"},
                "scheme": {"default": "http"},
                "port": {"api": {"default": API_PORT, "public": API_PORT, "internal": API_PORT, "admin": API_PORT}},
            },
        },
        "manifests": {
            "job_rabbit_init": False,
            "job_db_init": False,  # the database layer (mariadb-operator / our Job) creates DB and user
            # db-sync runs db_sync and then `keystone-manage bootstrap` for this region: every
            # region needs it to register itself; the first region's (wave 0) creates the schema.
            "job_db_sync": True,
            # wanwide owns the fernet/credential keys: one set, copied into every region.
            # The chart's setup jobs would generate different keys per region, and a
            # rotation cron could only rewrite its own region's copy: all off.
            "secret_fernet_keys": False,
            "secret_credential_keys": False,
            "job_fernet_setup": False,
            "job_credential_setup": False,
            "job_credential_cleanup": False,
            "cron_fernet_rotate": False,
            "cron_credential_rotate": False,
            "ingress_api": False,
            "service_ingress_api": False,
        },
        "conf": {"keystone": plan.keystone.conf(memcache_servers(plan, region))},
        "labels": {
            "api": {"node_selector_key": sel_key, "node_selector_value": sel_val},
            "job": {"node_selector_key": sel_key, "node_selector_value": sel_val},
        },
        "pod": {
            "replicas": {"api": plan.keystone.processes},
            "labels": {"default": plan.labels(region, "keystone")},
        },
    }
    if not plan.keystone.cache:
        # the chart's api pods wait (dep-check) for the oslo_cache Service too: without a
        # memcached there is none, so they would wait forever
        v["dependencies"] = {"static": {"api": {"services": [{"endpoint": "internal", "service": "oslo_db"}]}}}
    if images:
        v["images"] = {"tags": images}
    return deep_merge(v, ks.values)


def releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    ks = plan.spec.openstack.keystone
    return [
        HelmRelease(
            name=RELEASE,
            namespace=plan.namespace(r),
            region=r,
            repo=ks.chart_repo,
            chart=ks.chart,
            version=ks.chart_version,
            values=values(plan, r, passwords),
            wave=0 if r == plan.schema_region else 1,
        )
        for r in plan.region_names
    ]


def memcached(plan: TrialPlan) -> list[dict[str, Any]]:
    """One memcached per region when caching is on (with a metrics exporter when monitoring is)."""
    if not plan.keystone.cache:
        return []
    image = plan.spec.openstack.keystone.images.memcached or MEMCACHED_IMAGE
    out = []
    for r in plan.regions:
        ns = plan.namespace(r.name)
        labels = plan.labels(r.name, "cache")
        select = {names.L_TRIAL: plan.name, names.L_REGION: r.name, names.L_ROLE: "cache"}
        pod_spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "memcached",
                    "image": image,
                    "args": ["-m", str(MEMCACHED_MEMORY_MB), "-c", str(MEMCACHED_CONNECTIONS)],
                    "ports": [{"name": "memcache", "containerPort": MEMCACHED_PORT}],
                    "readinessProbe": {"tcpSocket": {"port": MEMCACHED_PORT}, "periodSeconds": 5},
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 11211, "allowPrivilegeEscalation": False},
                },
            ],
        }
        if plan.monitoring.enabled:
            pod_spec["containers"].append({
                "name": "exporter",
                "image": MEMCACHED_EXPORTER_IMAGE,
                "ports": [{"name": "metrics", "containerPort": 9150}],
            })
        sel = plan.node_selector(r.name)
        if sel:
            pod_spec["nodeSelector"] = sel
        out.append(
            obj(
                "apps/v1",
                "Deployment",
                meta(MEMCACHED, ns, labels),
                spec={"replicas": 1, "selector": {"matchLabels": select},
                      "template": {"metadata": {"labels": labels}, "spec": pod_spec}},
            )
        )
        out.append(
            obj(
                "v1",
                "Service",
                meta(MEMCACHED, ns, labels),
                spec={"selector": select, "ports": [{"name": "memcache", "port": MEMCACHED_PORT,
                                                     "targetPort": MEMCACHED_PORT}]},
            )
        )
    return out
