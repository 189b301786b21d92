"""Secrets a trial needs, as copies of the Benchmark's own Secrets.

The planner is pure and never sees secret data: each Secret it renders names
its source (``wanwide.io/copy-from``) and which keys to copy
(``wanwide.io/copy-keys``); the apply layer fills the data.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan import names
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import meta, obj

CREDENTIALS = "wanwide-credentials"
FERNET = "keystone-fernet-keys"
CREDENTIAL_KEYS = "keystone-credential-keys"
RESULTS = "wanwide-results"

# Keys of the Benchmark's key Secret (created once per Benchmark by the operator).
KEY_FIELDS = {
    "fernet": ("fernet-0", "fernet-1"),
    "credential": ("credential-0", "credential-1"),
    "passwords": ("admin-password", "db-root-password", "keystone-db-password"),
    # each service's Keystone, database and bus user (the bus's admin user and Erlang cookie: rabbitmq-password);
    # read only by trials that deploy the service (a Benchmark made before them has none and needs none)
    "service-passwords": ("nova-password", "placement-password", "glance-password", "neutron-password",
                          "rabbitmq-password"),
}
SERVICE_PASSWORD = {"nova": "nova-password", "placement": "placement-password", "glance": "glance-password",
                    "neutron": "neutron-password", "messaging": "rabbitmq-password"}


def password_keys(plan: TrialPlan) -> tuple[str, ...]:
    """The passwords a trial's objects and values use: Keystone's and those of the services it deploys."""
    cp = plan.control_plane
    extra = tuple(SERVICE_PASSWORD[s] for s in SERVICE_PASSWORD if cp is not None and s in cp.services)
    return KEY_FIELDS["passwords"] + extra


def keys_secret_name(benchmark: str) -> str:
    return f"{benchmark}-wanwide-keys"


def _copy(plan: TrialPlan, name: str, ns: str, region: str | None, source: str,
          keys: dict[str, str] | None) -> dict[str, Any]:
    """A Secret the apply layer fills from ``source``: ``keys`` renamed source → copy, or (None) all of its
    keys and its type (a pull Secret)."""
    copy_keys = names.COPY_ALL if keys is None else ",".join(f"{s}={d}" for s, d in keys.items())
    body = {} if keys is None else {"type": "Opaque"}
    return obj("v1", "Secret", meta(name, ns, plan.labels(region),
                                    {names.A_COPY_FROM: source, names.A_COPY_KEYS: copy_keys}), **body)


def runner_identity(plan: TrialPlan) -> list[dict[str, Any]]:
    """``spec.runner.pod``'s ServiceAccount and pull Secrets, copied from the Benchmark's namespace into each
    region's namespace (where the Rally and probe Jobs run): the ServiceAccount with its annotations (e.g.
    ``eks.amazonaws.com/role-arn``), each Secret whole."""
    want = plan.spec.runner.pod
    out = []
    for r in plan.region_names:
        ns = plan.namespace(r)
        if want.service_account_name:
            out.append(obj("v1", "ServiceAccount", meta(
                want.service_account_name, ns, plan.labels(r),
                {names.A_COPY_FROM: f"{plan.bench_namespace}/{want.service_account_name}"})))
        for name in want.image_pull_secrets or []:
            out.append(_copy(plan, name, ns, r, f"{plan.bench_namespace}/{name}", None))
    return out


def render(plan: TrialPlan) -> list[dict[str, Any]]:
    src = f"{plan.bench_namespace}/{keys_secret_name(plan.benchmark)}"
    out = []
    region_of_ns = {plan.namespace(r): r for r in plan.region_names}
    for ns in plan.namespaces:
        region = region_of_ns.get(ns)
        out.append(_copy(plan, CREDENTIALS, ns, region, src, {k: k for k in password_keys(plan)}))
        if region is None:
            continue
        out.append(_copy(plan, FERNET, ns, region, src, {"fernet-0": "0", "fernet-1": "1"}))
        out.append(_copy(plan, CREDENTIAL_KEYS, ns, region, src, {"credential-0": "0", "credential-1": "1"}))
    s3 = plan.spec.results.s3
    if s3 is not None and s3.secret_ref is not None:
        ref = s3.secret_ref
        for r in plan.region_names:  # the runners' regions, and every region's network probe
            out.append(
                _copy(
                    plan,
                    RESULTS,
                    plan.namespace(r),
                    r,
                    f"{plan.bench_namespace}/{ref.name}",
                    {ref.access_key_key: "AWS_ACCESS_KEY_ID", ref.secret_key_key: "AWS_SECRET_ACCESS_KEY"},
                )
            )
    return out + runner_identity(plan)
