"""Rally load: the task (format v2), the runner configuration and one Job per load region."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ..api.units import seconds
from ..plan.trial import TrialPlan
from .common import PLACEHOLDER, meta, obj, svc_host
from .database import endpoint
from .keystone import API_PORT, API_SERVICE, cache_settings, public_url
from .secrets import CREDENTIALS, RESULTS

JOB = "rally"
CONFIG = "rally-config"
CONFIG_PATH = "/etc/wanwide/runner.json"
RESULTS_DIR = "/results"


@dataclass(frozen=True)
class ResultsTarget:
    """Where bundles go (resolved from results.s3 or an ObjectBucketClaim)."""

    endpoint: str
    bucket: str
    prefix: str
    region: str = "us-east-1"


def results_target(plan: TrialPlan) -> ResultsTarget | None:
    s3 = plan.spec.results.s3
    if s3 is None:
        return None
    return ResultsTarget(s3.endpoint, s3.bucket, s3.prefix, s3.region)


def task(plan: TrialPlan, region: str, raw_task: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rally task v2 for one load region (warm-up subtasks first, titled ``warmup: …``)."""
    if raw_task is not None:
        return raw_task
    subtasks = []
    warm = plan.spec.workload.warmup
    for s in plan.scenarios:
        contexts: dict[str, Any] = {}
        if s.users:
            contexts["users"] = {"tenants": s.users[0], "users_per_tenant": s.users[1]}
        if warm is not None:
            subtasks.append({
                "title": f"warmup: {s.name}",
                "scenario": {s.name: dict(s.args)},
                "runner": {"constant": {"times": warm.times, "concurrency": min(s.concurrency, warm.times)}},
                "contexts": dict(contexts),
            })
        subtasks.append({
            "title": s.name,
            "scenario": {s.name: dict(s.args)},
            "runner": {"constant": {"times": s.times, "concurrency": s.concurrency}},
            "contexts": contexts,
            "sla": {"failure_rate": {"max": 0}},
        })
    return {"version": 2, "title": f"{plan.name} {region}", "tags": [plan.benchmark, plan.id, region],
            "subtasks": subtasks}


def runner_config(
    plan: TrialPlan,
    region: str,
    *,
    start_at: str | None = None,
    attempt: int = 1,
    raw_task: dict[str, Any] | None = None,
    results: ResultsTarget | None = None,
    local_dir: str = RESULTS_DIR,
    keystone_url: str | None = None,
    rtt_targets: list[dict[str, Any]] | None = None,
    db_host: str | None = None,
    db_port: int | None = None,
) -> dict[str, Any]:
    """The runner's configuration (docs/contracts.md); the lab passes its own addresses."""
    db = endpoint(plan, region)
    ks = plan.spec.openstack.keystone
    if rtt_targets is None:
        rtt_targets = []
        for r in plan.region_names:
            if r == region:
                continue
            rtt_targets.append({"region": r, "kind": "keystone", "host": svc_host(API_SERVICE, plan.namespace(r)),
                                "port": API_PORT})
            other = endpoint(plan, r)
            if other.host != db.host:
                rtt_targets.append({"region": r, "kind": "database", "host": other.host, "port": other.port})
    gauge_db = None
    if plan.backend in ("mariadb", "galera"):
        gauge_db = {"backend": plan.backend, "host": db_host or db.host, "port": db_port or db.port, "user": "root",
                    "password_env": "DB_ROOT_PASSWORD"}
    res = results if results is not None else results_target(plan)
    return {
        "benchmark": plan.benchmark,
        "namespace": plan.bench_namespace,
        "trial": {"id": plan.id, "index": plan.index, "repetition": plan.repetition, "parameters": dict(plan.parameters)},
        "region": region,
        "role": "load",
        "attempt": attempt,
        "keystone": {
            "url": keystone_url or public_url(plan, region),
            "region_name": region,
            "username": "admin",
            "password_env": "OS_PASSWORD",
            "project_name": "admin",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
            "cache": cache_settings(plan, region),
            "rally_user": plan.spec.runner.rally_users == "Prepared",
        },
        "task": task(plan, region, raw_task),
        "start_at": start_at,
        "max_start_skew_s": seconds(plan.spec.workload.max_start_skew),
        "gauges": {"database": gauge_db, "rtt_targets": rtt_targets, "samples": 10},
        "network_requested": [
            {"src": a, "dst": b, "delay_ms": v.delay_ms, "jitter_ms": v.jitter_ms, "loss_pct": v.loss_pct,
             "rate_mbit": v.rate_mbit}
            for (a, b), v in sorted(plan.links.items())
        ],
        "results": {
            "local_dir": local_dir,
            "s3": None if res is None else {
                "endpoint": res.endpoint, "bucket": res.bucket, "prefix": res.prefix, "region": res.region,
                "access_key_env": "AWS_ACCESS_KEY_ID", "secret_key_env": "AWS_SECRET_ACCESS_KEY",
            },
        },
        "versions": {
            "wanwide": __version__,
            "keystone-chart": f"{ks.chart}-{ks.chart_version}",
            "database": plan.backend,
        },
    }


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def jobs(
    plan: TrialPlan,
    *,
    start_at: str | None = None,
    attempt: int = 1,
    raw_task: dict[str, Any] | None = None,
    results: ResultsTarget | None = None,
) -> list[dict[str, Any]]:
    """ConfigMap + Job per load region. Created at Loading, when ``start_at`` is known."""
    out = []
    res = results if results is not None else results_target(plan)
    timeout = int(seconds(plan.spec.timeouts.loading))
    for r in plan.load_regions:
        ns = plan.namespace(r)
        labels = plan.labels(r, "load")
        cfg = runner_config(plan, r, start_at=start_at or PLACEHOLDER, attempt=attempt, raw_task=raw_task, results=res)
        out.append(obj("v1", "ConfigMap", meta(CONFIG, ns, labels),
                       data={"runner.json": json.dumps(cfg, indent=2, sort_keys=True)}))
        env = [
            _secret_env("OS_PASSWORD", CREDENTIALS, "admin-password"),
            _secret_env("DB_ROOT_PASSWORD", CREDENTIALS, "db-root-password"),
        ]
        if res is not None:
            env += [_secret_env("AWS_ACCESS_KEY_ID", RESULTS, "AWS_ACCESS_KEY_ID"),
                    _secret_env("AWS_SECRET_ACCESS_KEY", RESULTS, "AWS_SECRET_ACCESS_KEY")]
        pod: dict[str, Any] = {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001},
            "containers": [{
                "name": "runner",
                "image": plan.spec.runner.image,
                "args": ["runner", "run", "--config", CONFIG_PATH],
                "env": env,
                "volumeMounts": [{"name": "config", "mountPath": "/etc/wanwide", "readOnly": True},
                                 {"name": "results", "mountPath": RESULTS_DIR}],
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
                "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": False},
            }],
            "volumes": [{"name": "config", "configMap": {"name": CONFIG}}, {"name": "results", "emptyDir": {}}],
        }
        sel = next((x.node_selector for x in plan.regions if x.name == r), None)
        if sel:
            pod["nodeSelector"] = sel
        out.append(obj("batch/v1", "Job", meta(JOB, ns, labels, {"wanwide.io/attempt": str(attempt)}), spec={
            "backoffLimit": 0,
            "activeDeadlineSeconds": timeout,
            "ttlSecondsAfterFinished": 86400,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        }))
    return out
