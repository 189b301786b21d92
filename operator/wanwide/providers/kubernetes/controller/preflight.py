"""A Benchmark's first phase: the checks of ``wanwide doctor`` (doctor/checks.py judges), run by the
operator before any trial starts. The netem probe runs as Jobs across reconciles: one pass starts them,
a later one reads their pods and decides; the verdict is kept in ``status.preflight``."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from wanwide import DEFAULT_IMAGE
from wanwide.core.api.benchmark import Benchmark
from wanwide.core.lifecycle import needs_shaping
from wanwide.core.plan import names
from wanwide.core.plan.trial import TrialPlan
from wanwide.core.timestamps import iso, parse
from wanwide.providers.kubernetes.controller import ownership, trialstate
from wanwide.providers.kubernetes.controller.actions import when_bound
from wanwide.providers.kubernetes.doctor import checks, gather
from wanwide.providers.kubernetes.kube.client import Kube
from wanwide.providers.kubernetes.render import chaos

CONDITION = "Preflight"
PROBE_TIMEOUT_S = 120.0  # a probe pod not finished by then is reported, not waited for
PROBE_POLL_S = 3.0  # how often the probe pods are read while they run
RECHECK_S = 60.0  # a held Benchmark is checked again this long after its last verdict
ROLE = "preflight"


@dataclass
class Outcome:
    """What one pass decided: whether trials may start, the status fields to write, events to emit."""

    passed: bool
    status: dict[str, Any] = field(default_factory=dict)  # conditions and/or preflight
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    failed: str | None = None  # failing past timeouts.preflight: the Benchmark fails, saying this
    wake_s: float | None = None  # look again this soon (the probe pods are running)


# ---- pure -------------------------------------------------------------------------------------

def passed_before(conds: list[dict[str, Any]], generation: int | None, started: bool) -> bool:
    """A verdict that still holds: True for this generation, or for an earlier one once trials run."""
    c = next((c for c in conds if c.get("type") == CONDITION), None)
    return bool(c and c.get("status") == "True" and (started or c.get("observedGeneration") == generation))


def due(pre: dict[str, Any], at: dt.datetime) -> bool:
    """Whether to check now: never checked, or the last failing verdict is RECHECK_S old."""
    last = pre.get("checkedTime")
    return last is None or (at - parse(last)).total_seconds() >= RECHECK_S


def verdict(found: list[checks.Check], mode: str) -> tuple[bool, str, str, str]:
    """(trials may start, condition status, reason, message) from the checks and spec.preflight.mode."""
    failed = [c for c in found if c.state == checks.FAIL]
    warned = [c for c in found if c.state == checks.WARN]
    if not failed:
        note = "; ".join(f"{c.what}: {c.detail}" for c in warned)
        return True, "True", "Passed", f"{len(found)} check(s) passed" + (f" (warnings: {note})" if note else "")
    said = "; ".join(f"{c.what}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "") for c in failed)
    if mode == "Warn":
        return True, "True", "Warned", f"{len(failed)} check(s) failed, trials start anyway (mode Warn): {said}"
    return False, "False", "Failed", (f"{len(failed)} of {len(found)} check(s) failed, no trial starts until they "
                                      f"pass (checked again every {RECHECK_S:.0f} s): {said}")


def probe_job(bench: dict[str, Any], node: str, index: int, namespace: str, image: str, run: str,
              pull_secrets: list[str], tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``wanwide doctor``'s netem Job, labelled as the Benchmark's; root with NET_ADMIN in its own netns
    (tc needs both), so in the operator's own image (``image``), never the Benchmark's; only the region pods'
    ``tolerations``; what tc said lands in the termination message."""
    job = gather.netem_job(node, index, namespace, image, run, tolerations)
    lab = {**names.MANAGED_BY, names.L_BENCHMARK: names.label_value(bench["metadata"]["name"]), names.L_ROLE: ROLE}
    job["metadata"]["labels"].update(lab)
    pod = job["spec"]["template"]["spec"]
    job["spec"]["template"]["metadata"]["labels"].update(lab)
    job["spec"]["activeDeadlineSeconds"] = int(PROBE_TIMEOUT_S)
    if pull_secrets:
        pod["imagePullSecrets"] = [{"name": n} for n in pull_secrets]
    return job


def namespace_objects(bench: dict[str, Any], ns: str, subject: dict[str, str] | None,
                      trial_clusterrole: str | None) -> list[dict[str, Any]]:
    """The probe namespace (the privileged Pod Security level: NET_ADMIN), labelled with the Benchmark's uid
    (nothing else of that name is ever changed or deleted), and the operator's RoleBinding."""
    lab = {**names.MANAGED_BY, names.L_BENCHMARK: names.label_value(bench["metadata"]["name"]), names.L_ROLE: ROLE}
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {
        **lab, names.L_OWNER: bench["metadata"].get("uid") or "", "pod-security.kubernetes.io/enforce": "privileged"}}}]
    if subject and trial_clusterrole:
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "wanwide-operator", "namespace": ns, "labels": lab},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": trial_clusterrole},
                    "subjects": [subject]})
    return out


def probe_results(jobs: list[dict[str, Any]], pods: list[dict[str, Any]], timed_out: bool
                  ) -> dict[str, tuple[bool | None, str]] | None:
    """Per probed node (usable, what the probe said); None while some pod has not finished and time is left."""
    nodes = [j["spec"]["template"]["spec"].get("nodeName") for j in jobs]
    out: dict[str, tuple[bool | None, str]] = {}
    for p in pods:
        node, phase = (p.get("spec") or {}).get("nodeName"), (p.get("status") or {}).get("phase")
        if node in nodes and phase in ("Succeeded", "Failed"):
            out[node] = (phase == "Succeeded", gather.terminated(p))
    if len(out) < len(nodes) and not timed_out:
        return None
    for n in nodes:
        out.setdefault(n, (None, f"the probe pod did not finish within {PROBE_TIMEOUT_S:.0f} s"))
    return out


# ---- I/O --------------------------------------------------------------------------------------

def observe(kube: Kube, bench: dict[str, Any], model: Benchmark, plans: list[TrialPlan]) -> checks.Observed:
    """What the checks need, read with the operator's own rights."""
    o = checks.Observed()
    o.served = gather.served(kube)
    o.dependency_deployments = gather.dependencies(kube.list("apps/v1", "Deployment"))
    o.nodes = kube.list("v1", "Node")
    o.chaos_daemons = kube.list("v1", "Pod", {"app.kubernetes.io/component": checks.CHAOS_DAEMON})
    if any(p.backend == "galera" for p in plans):
        o.storage_classes = kube.list("storage.k8s.io/v1", "StorageClass")
        o.volumes = kube.list("v1", "PersistentVolume")
    o.regions = {r.name: r.node_selector for r in plans[0].regions}
    o.tolerations = [t.wire() for t in model.spec.runner.pod.tolerations or []]
    o.netem_off = ("not probed (spec.preflight.netemProbe: false)", "set spec.preflight.netemProbe: true")
    o.s3 = gather.bucket(kube, bench)
    return o


def step(kube: Kube, bench: dict[str, Any], model: Benchmark, plans: list[TrialPlan], started: bool,
         at: dt.datetime, subject: dict[str, str] | None = None, trial_clusterrole: str | None = None,
         probe_image: str = DEFAULT_IMAGE) -> Outcome:
    """One pass of the preflight for ``bench`` (its status as last written)."""
    status = bench.get("status") or {}
    conds = list(status.get("conditions") or [])
    gen = bench["metadata"].get("generation")
    if passed_before(conds, gen, started):
        return Outcome(True)
    pre = current(status, gen)
    if pre.get("gaveUp"):
        return Outcome(False, failed=message_of(conds))
    mode = model.spec.preflight.mode
    if mode == "Skip":
        conds = trialstate.set_condition(conds, CONDITION, "True", "Skipped", "spec.preflight.mode: Skip", gen, at)
        return Outcome(True, {"conditions": conds})
    ns = names.preflight_namespace(bench["metadata"]["namespace"], bench["metadata"]["name"])
    if not pre.get("run"):
        if not due(pre, at):
            return Outcome(False, wake_s=RECHECK_S - (at - parse(pre["checkedTime"])).total_seconds())
        pre.setdefault("since", iso(at))
        o = observe(kube, bench, model, plans)
        nodes = [n["metadata"]["name"] for n in checks.hosts(o)]
        if not nodes:
            o.netem_off = ("not probed: no node can host a region", "see the placement line")
        elif not o.served.get("NetworkChaos"):
            o.netem_off = ("not probed: Chaos Mesh is not served", "install Chaos Mesh first")
        elif any(chaos.needs_netem(p) for p in plans) and model.spec.preflight.netem_probe:
            there = kube.get("v1", "Namespace", ns)
            if there is not None and not ownership.namespace_ours(there, bench["metadata"].get("uid")):
                o.netem_off = (f"not probed: namespace {ns} exists and is not this Benchmark's",
                               f"delete or rename namespace {ns} (wanwide changes only namespaces it made)")
                return _decide(kube, bench, model, plans, o, conds, pre, at, ns)
            run = uuid.uuid4().hex[:6]
            for obj in namespace_objects(bench, ns, subject, trial_clusterrole):
                kube.apply(obj)
            for i, node in enumerate(nodes):
                _apply(kube, probe_job(bench, node, i, ns, probe_image, run,
                                       list(model.spec.runner.pod.image_pull_secrets or []), o.tolerations))
            why = f"netem probe on {len(nodes)} node(s) in namespace {ns}"
            first = "checkedTime" not in pre  # checked again: the failing verdict stands meanwhile
            if first:
                conds = trialstate.set_condition(conds, CONDITION, "Unknown", "Checking", why, gen, at)
            return Outcome(False, {"conditions": conds, "preflight": {**pre, "run": run, "startTime": iso(at)}},
                           [("Normal", "PreflightChecking", why)] if first else [], wake_s=PROBE_POLL_S)
        return _decide(kube, bench, model, plans, o, conds, pre, at, ns)
    run = pre["run"]
    jobs = kube.list("batch/v1", "Job", {gather.PROBE_LABEL: run}, ns)
    pods = kube.list("v1", "Pod", {gather.PROBE_LABEL: run}, ns)
    timed_out = (at - parse(pre["startTime"])).total_seconds() >= PROBE_TIMEOUT_S
    results = probe_results(jobs, pods, timed_out)
    if results is None:
        return Outcome(False, wake_s=PROBE_POLL_S)
    o = observe(kube, bench, model, plans)
    o.netem = results
    for j in jobs:
        kube.delete("batch/v1", "Job", j["metadata"]["name"], ns)
    return _decide(kube, bench, model, plans, o, conds, pre, at, ns)


def _apply(kube: Kube, obj: dict[str, Any]) -> None:
    """Apply, waiting out the authorizer's cache trailing the namespace's new RoleBinding."""
    when_bound(lambda: kube.apply(obj), f"apply {obj['kind']} {obj['metadata']['name']}")


def current(status: dict[str, Any], generation: int | None) -> dict[str, Any]:
    """``status.preflight`` of this generation (a new spec is checked afresh, its timeout anew)."""
    pre = dict(status.get("preflight") or {})
    return pre if pre.get("generation") == generation else {"generation": generation}


def gave_up(pre: dict[str, Any], timeout_s: float, at: dt.datetime) -> bool:
    """Failing checks held the Benchmark for timeouts.preflight since the first check of its generation."""
    return bool(pre.get("since")) and (at - parse(pre["since"])).total_seconds() >= timeout_s


def message_of(conds: list[dict[str, Any]]) -> str:
    return next((c.get("message") or "" for c in conds if c.get("type") == CONDITION), "") or "preflight failed"


def _decide(kube: Kube, bench: dict[str, Any], model: Benchmark, plans: list[TrialPlan], o: checks.Observed,
            conds: list[dict[str, Any]], pre: dict[str, Any], at: dt.datetime, ns: str) -> Outcome:
    from wanwide.core.api.units import seconds

    found = checks.for_benchmark(o, sorted({p.backend for p in plans}), any(needs_shaping(p) for p in plans),
                                 any(chaos.needs_netem(p) for p in plans))
    ok, cstatus, reason, message = verdict(found, model.spec.preflight.mode)
    timeout = model.spec.timeouts.preflight
    final = not ok and gave_up(pre, seconds(timeout), at)
    if final:
        message = f"gave up after timeouts.preflight ({timeout}): " + message.replace(
            f" (checked again every {RECHECK_S:.0f} s)", "")
    old = next((c for c in conds if c.get("type") == CONDITION), {})
    conds = trialstate.set_condition(conds, CONDITION, cstatus, reason, message, bench["metadata"].get("generation"), at)
    lines = [{"what": c.what, "state": c.state, "detail": c.detail, "fix": c.fix} for c in found]
    events = [] if (old.get("reason"), old.get("message")) == (reason, message) else [
        ("Normal" if reason == "Passed" else "Warning", f"Preflight{reason}", message)]
    there = kube.get("v1", "Namespace", ns) if ok or final else None
    if there is not None and ownership.namespace_ours(there, bench["metadata"].get("uid")):
        kube.delete("v1", "Namespace", ns)  # no more probes: the privileged namespace goes
    return Outcome(ok, {"conditions": conds,
                        "preflight": {**pre, "run": None, "checkedTime": iso(at), "checks": lines,
                                      **({"gaveUp": True} if final else {})}},
                   events, failed=message if final else None, wake_s=None if ok or final else RECHECK_S)
