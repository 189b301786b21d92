"""Rally load: the runner configuration and one Job per load region (Kubernetes addresses)."""

from __future__ import annotations

import copy
import json
from typing import Any

from wanwide.core.api.units import seconds
from wanwide.core.contracts import EXIT_UPLOAD, ProbeConfig, ProbeTarget, S3Target, s3_target
from wanwide.core.lifecycle import measured_pairs, needs_shaping, probe_samples, rtt_requested
from wanwide.core.plan.runner import Addresses, config_json, runner_config, watch_configs
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.render.common import PLACEHOLDER, meta, obj, svc_host
from wanwide.providers.kubernetes.render.database import endpoint, member_addresses
from wanwide.providers.kubernetes.render.keystone import (
    API_PORT,
    API_SERVICE,
    memcache_servers,
    public_url,
)
from wanwide.providers.kubernetes.render.secrets import CREDENTIALS, RESULTS

JOB = "rally"
CONFIG = "rally-config"
CONFIG_PATH = "/etc/wanwide/runner.json"
RESULTS_DIR = "/results"
EPOCH = "1970-01-01T00:00:00Z"
"""A start that validates, replaced by :data:`PLACEHOLDER` in what is rendered before the start is known."""
# The Pod Security Standard "restricted": the image's user (10001, HOME /home/wanwide), Rally's
# state and the bundle under RESULTS_DIR (an emptyDir); RTTs are TCP connects (no raw sockets).
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001,
                "seccompProfile": {"type": "RuntimeDefault"}}
RUNNER_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": False,
                      "capabilities": {"drop": ["ALL"]}}


def results_target(plan: TrialPlan) -> S3Target | None:
    """``results.s3`` as the runner's upload target (keys from the results Secret, as the Job's env names them)."""
    return s3_target(plan.spec.results.s3)


def targets(plan: TrialPlan) -> dict[tuple[str, str], tuple[str, int]]:
    """Every region's Keystone and database address (cluster DNS names)."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for r in plan.region_names:
        out[(r, "keystone")] = (svc_host(API_SERVICE, plan.namespace(r)), API_PORT)
        db = endpoint(plan, r)
        out[(r, "database")] = (db.host, db.port)
    return out


def addresses(plan: TrialPlan, region: str, known: dict[tuple[str, str], tuple[str, int]] | None = None) -> Addresses:
    """Where the runner of ``region`` finds the trial's services (``known``: :func:`targets`, computed once)."""
    db = endpoint(plan, region)
    return Addresses(keystone_url=public_url(plan, region), database=(db.host, db.port),
                     memcache_servers=memcache_servers(plan, region), targets=known or targets(plan),
                     members=member_addresses(plan))


def config_document(plan: TrialPlan, region: str, *, start_at: str | None, attempt: int,
                    results: S3Target | None, known: dict[tuple[str, str], tuple[str, int]] | None = None
                    ) -> dict[str, Any]:
    """runner.json of one load region (the start time a placeholder until Loading sets it)."""
    ks = plan.spec.openstack.keystone
    cfg = runner_config(plan, region, addresses(plan, region, known), start_at=start_at, attempt=attempt,
                        results=results, local_dir=RESULTS_DIR,
                        versions={"keystone-chart": f"{ks.chart}-{ks.chart_version}"},
                        shaper_counters=["wanwide", "runner", "qdisc", region],  # Chaos Mesh's netem in its pod
                        pair_watch=True)
    doc = config_json(cfg)
    doc["start_at"] = start_at or PLACEHOLDER
    return doc


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def _s3_env() -> list[dict[str, Any]]:
    return [_secret_env("AWS_ACCESS_KEY_ID", RESULTS, "AWS_ACCESS_KEY_ID"),
            _secret_env("AWS_SECRET_ACCESS_KEY", RESULTS, "AWS_SECRET_ACCESS_KEY")]


def runner_pod(plan: TrialPlan, region: str, args: list[str], env: list[dict[str, Any]], config: str,
               resources: dict[str, Any]) -> dict[str, Any]:
    """The pod of a Job in the runner's image (Rally, the network probe): restricted, the region's nodes, and
    what ``spec.runner.pod`` says (ServiceAccount, pull Secrets, nodeSelector added to the placement,
    tolerations, affinity; resources: the runner's only, not the probe's)."""
    want = plan.spec.runner.pod
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        # the runner never calls the API server: no token in the pod (a cloud identity, IRSA or workload
        # identity, comes from its own projected token or the metadata server, not this one)
        "automountServiceAccountToken": False,
        "securityContext": copy.deepcopy(POD_SECURITY),
        "containers": [{
            "name": "runner",
            "image": plan.runner_image,
            "args": args,
            "env": env,
            "volumeMounts": [{"name": "config", "mountPath": "/etc/wanwide", "readOnly": True},
                             {"name": "results", "mountPath": RESULTS_DIR}],
            "resources": resources,
            "securityContext": copy.deepcopy(CONTAINER_SECURITY),
        }],
        "volumes": [{"name": "config", "configMap": {"name": config}}, {"name": "results", "emptyDir": {}}],
    }
    sel = {**(want.node_selector or {}), **(plan.node_selector(region) or {})}  # the region's placement wins
    if sel:
        pod["nodeSelector"] = sel
    if want.service_account_name:
        pod["serviceAccountName"] = want.service_account_name
    if want.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": n} for n in want.image_pull_secrets]
    if want.tolerations:
        pod["tolerations"] = [t.wire() for t in want.tolerations]
    if want.affinity:
        pod["affinity"] = copy.deepcopy(dict(want.affinity))
    return pod


RUNNER_METRICS_PORT = 9464
"""The runner's live metrics (``wanwide runner run --metrics-port``), named ``metrics`` on the container."""

PROBE = "network-probe"
PROBE_PATH = "/etc/wanwide/probe.json"
PROBE_SETTLE_S = 60.0
"""How long a probe pod waits before measuring when the plan shapes links: it starts after the WAN's Chaos Mesh
objects, which never select it (Chaos Mesh selects an object's pods once), so the operator shapes it with objects
of its own (render/chaos.py ``late``) as soon as it runs; Chaos Mesh then re-sets the tc rules of every pod it
touches (under qemu's TCG: seconds per pod)."""


def probe_jobs(plan: TrialPlan, check: int, results: S3Target) -> list[dict[str, Any]]:
    """The network check's measurement ``check``: a ConfigMap and a Job per region that probes (the
    lifecycle's probe pairs, to each destination's Keystone Service, the way the workload crosses the WAN;
    and its own region's, the reference without the WAN)."""
    known = targets(plan)
    by_src: dict[str, list[ProbeTarget]] = {}
    for src, dst in measured_pairs(plan):
        host, port = known[(dst, "keystone")]
        by_src.setdefault(src, []).append(ProbeTarget(region=dst, host=host, port=port,
                                                      requested_rtt_ms=rtt_requested(plan, (src, dst))))
    out = []
    name = f"{PROBE}-{check}"
    for src, tgts in by_src.items():
        ns, labels = plan.namespace(src), plan.labels(src, "probe")
        cfg = ProbeConfig(benchmark=plan.benchmark, trial=plan.id, region=src, check=check, targets=tgts,
                          samples=probe_samples(plan), results=results,
                          settle_s=PROBE_SETTLE_S if needs_shaping(plan) else 0)
        out.append(obj("v1", "ConfigMap", meta(name, ns, labels),
                       data={"probe.json": cfg.model_dump_json(indent=2)}))
        pod = runner_pod(plan, src, ["runner", "probe", "--config", PROBE_PATH], [] if results.ambient else _s3_env(),
                         name, {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}})
        out.append(obj("batch/v1", "Job", meta(name, ns, labels), spec={
            "backoffLimit": 1, "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 86400,
            "template": {"metadata": {"labels": labels}, "spec": pod}}))
    return out


def jobs(
    plan: TrialPlan,
    *,
    start_at: str | None = None,
    attempt: int = 1,
    results: S3Target | None = None,
) -> list[dict[str, Any]]:
    """ConfigMap + Job per load region. Created at Loading, when ``start_at`` is known."""
    out = []
    res = results if results is not None else results_target(plan)
    # the runner keeps retrying its upload through a storage outage for the Collecting timeout,
    # inside the Job's deadline
    collecting = int(seconds(plan.spec.timeouts.collecting))
    if res is not None:
        res = res.model_copy(update={"upload_deadline_s": float(collecting)})
    timeout = int(seconds(plan.spec.timeouts.loading)) + collecting
    known = targets(plan)
    for r in plan.load_regions:
        ns = plan.namespace(r)
        labels = plan.labels(r, "load")
        cfg = config_document(plan, r, start_at=start_at, attempt=attempt, results=res, known=known)
        out.append(obj("v1", "ConfigMap", meta(CONFIG, ns, labels),
                       data={"runner.json": json.dumps(cfg, indent=2, sort_keys=True)}))
        env = [
            _secret_env("OS_PASSWORD", CREDENTIALS, "admin-password"),
            _secret_env("DB_ROOT_PASSWORD", CREDENTIALS, "db-root-password"),
        ] + (_s3_env() if res is not None and not res.ambient else [])
        live = ["--metrics-port", str(RUNNER_METRICS_PORT)] if plan.monitoring.enabled else []
        pod = runner_pod(plan, r, ["runner", "run", "--config", CONFIG_PATH, *live], env, CONFIG,
                         plan.spec.runner.pod.resources.wire() if plan.spec.runner.pod.resources
                         else copy.deepcopy(RUNNER_RESOURCES))
        if live:  # the experiment while Rally runs (pipeline/runner/live.py), scraped by the trial's PodMonitor
            pod["containers"][0]["ports"] = [{"name": "metrics", "containerPort": RUNNER_METRICS_PORT}]
        out.append(obj("batch/v1", "Job", meta(JOB, ns, labels, {"wanwide.io/attempt": str(attempt)}), spec={
            "backoffLimit": 0,
            # measured, not stored (the runner retried through the Collecting timeout): a failure of its own
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
                "containerName": "runner", "operator": "In", "values": [EXIT_UPLOAD]}}]},
            "activeDeadlineSeconds": timeout,
            "ttlSecondsAfterFinished": 86400,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        }))
    if res is not None:
        out += watch_jobs(plan, start_at=start_at, attempt=attempt, results=res, known=known)
    return out


WATCH = "network-watch"
WATCH_PATH = "/etc/wanwide/watch.json"


def watch_jobs(plan: TrialPlan, *, start_at: str | None, attempt: int, results: S3Target,
               known: dict[tuple[str, str], tuple[str, int]] | None = None) -> list[dict[str, Any]]:
    """The pairs of regions watched through the load (core/plan/runner.py ``watch_configs``): a ConfigMap and a
    Job per source region, ``wanwide runner watch`` in the runner's image, started with the runners (a late pod,
    shaped like them) and ending when the first load region's runner marks the load done."""
    loading = seconds(plan.spec.timeouts.loading)
    cfgs = watch_configs(plan, addresses(plan, plan.load_regions[0], known), start_at=start_at or EPOCH,
                         attempt=attempt, results=results, max_s=loading)
    out = []
    for cfg in cfgs:
        ns, labels = plan.namespace(cfg.region), plan.labels(cfg.region, "watch")
        doc = cfg.model_dump(mode="json")
        doc["start_at"] = start_at or PLACEHOLDER
        out.append(obj("v1", "ConfigMap", meta(WATCH, ns, labels, {"wanwide.io/attempt": str(attempt)}),
                       data={"watch.json": json.dumps(doc, indent=2, sort_keys=True)}))
        pod = runner_pod(plan, cfg.region, ["runner", "watch", "--config", WATCH_PATH],
                         [] if results.ambient else _s3_env(), WATCH,
                         {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}})
        pod["terminationGracePeriodSeconds"] = 45  # SIGTERM: the final document stored (30 s of retries)
        out.append(obj("batch/v1", "Job", meta(WATCH, ns, labels, {"wanwide.io/attempt": str(attempt)}), spec={
            "backoffLimit": 1, "activeDeadlineSeconds": int(loading) + 300, "ttlSecondsAfterFinished": 86400,
            "template": {"metadata": {"labels": labels}, "spec": pod}}))
    return out
