"""The message bus of each control plane: an openstack-helm ``rabbitmq`` release in the region the plane's bus runs
in (pure).

Its users and vhosts come from the chart's own definitions (``conf.users``, loaded at boot by the password-hash
init container): one per service that talks over it (Nova; Neutron when enabled), so no service chart runs its
``rabbit-init`` Job (which needs a RabbitMQ management image). Data in an emptyDir (``volume.enabled`` false:
a trial's bus lives as long as its namespace), no ingress, no test pod, no cluster-wait hook (the stage waits
for the StatefulSet's pods to be ready, which ``rabbitmqctl ping`` decides). ``fileDescriptors``: the broker's
open-file limit, through the one patch of its StatefulSet (:func:`fd_patches`).
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render import openstack as osr
from wanwide.providers.kubernetes.render.common import deep_merge
from wanwide.providers.kubernetes.render.keystone import HelmRelease

SERVICE = "messaging"
BUS_USERS = ("nova", "neutron")  # the services that talk over the bus, when enabled


def values(plan: TrialPlan, region: str, pw: dict[str, str] | None = None) -> dict[str, Any]:
    m = plan.spec.openstack.messaging
    cp = osr.control(plan)
    secret = osr.password(pw, SERVICE)
    users = {u: {"auth": {u: {"username": u, "password": osr.password(pw, u)}}, "path": f"/{u}"}
             for u in BUS_USERS if u in cp.services}
    tags = m.images.model_dump(exclude_none=True)
    v: dict[str, Any] = {
        "endpoints": {"oslo_messaging": {
            "namespace": plan.namespace(region),
            "hosts": {"default": osr.BUS_SERVICE},
            "auth": {"erlang_cookie": secret, "user": {"username": "rabbitmq", "password": secret},
                     "guest": {"password": secret}},
        }},
        "conf": {"users": users},
        "pod": {"replicas": {"server": m.replicas}, "labels": {"default": plan.labels(region, SERVICE)}},
        "labels": osr.node_labels(plan, region, ("server", "jobs", "test")),
        "volume": {"enabled": False, "chown_on_start": True},
        "manifests": {"ingress_management": False, "service_ingress_management": False, "job_cluster_wait": False,
                      "job_image_repo_sync": False, "pod_test": False, "network_policy": False,
                      "secret_registry": False},
    }
    if tags:
        v["images"] = {"tags": tags}
    return deep_merge(v, m.values)


def fd_patches(limit: int | None) -> tuple[dict[str, Any], ...]:
    """The broker's open-file limit (``spec.openstack.messaging.fileDescriptors``), which no value of the chart sets:
    its start script run under ``ulimit -n`` (a process may lower its own limit; RabbitMQ reads it at boot and
    refuses connections once its sockets reach it)."""
    if limit is None:
        return ()
    c = "/spec/template/spec/containers/0"
    return ({"kind": "StatefulSet", "name": osr.BUS_STATEFULSET, "ops": [
        {"op": "test", "path": f"{c}/name", "value": "rabbitmq"},
        {"op": "test", "path": f"{c}/command", "value": [START]},
        {"op": "replace", "path": f"{c}/command", "value": ["bash", "-c", f"ulimit -n {int(limit)} && exec {START}"]},
    ]},)


START = "/tmp/rabbitmq-start.sh"  # the chart's rabbitmq container command


def releases(plan: TrialPlan, passwords: dict[str, str] | None = None) -> list[HelmRelease]:
    return osr.plane_releases(plan, SERVICE, "messaging", osr.BUS_RELEASE, lambda r, _: values(plan, r, passwords),
                              fd_patches(osr.control(plan).messaging_file_descriptors))


__all__ = ["SERVICE", "START", "fd_patches", "releases", "values"]
