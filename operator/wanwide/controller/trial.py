"""One step of a Trial's phase machine: look at the children, act once, say where it stands.

Everything is re-derived from the Trial's status and its labelled children, so a
restarted operator resumes where the last one stopped. Each step is idempotent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api.benchmark import Benchmark
from ..api.topology import TopologySpec
from ..api.units import seconds
from ..kube import helm, readiness
from ..kube.client import Kube, MissingSource
from ..plan import names
from ..plan.errors import Problems
from ..plan.matrix import Point
from ..plan.trial import TrialPlan, plan_point
from ..render import Rendered, render_trial
from ..render.chaos import A_DURATION, A_REPLACES, CHAOS_API
from ..render.database import MARIADB_API
from ..render.keystone import API_SERVICE, MEMCACHED
from ..render.rally import JOB
from . import results
from .trialstate import iso, now, parse, timed_out

log = logging.getLogger(__name__)
A_PLAN_INPUT = "wanwide.io/plan-input"
DB_KINDS = {"MariaDB", "Database", "User", "Grant", "CrdbCluster"}


def plan_input(bench: dict[str, Any], topology: TopologySpec, point: Point) -> str:
    """The frozen input of a trial: edits to the Benchmark never change a trial in flight."""
    return json.dumps({
        "benchmark": {"apiVersion": bench["apiVersion"], "kind": "Benchmark",
                      "metadata": {"name": bench["metadata"]["name"], "namespace": bench["metadata"]["namespace"]},
                      "spec": bench["spec"]},
        "topology": topology.wire(),
        "point": {"index": point.index, "repetition": point.repetition, "values": point.values},
    }, sort_keys=True)


def trial_plan(trial: dict[str, Any]) -> TrialPlan:
    data = json.loads(trial["metadata"]["annotations"][A_PLAN_INPUT])
    bench = Benchmark.model_validate(data["benchmark"])
    point = Point(data["point"]["index"], data["point"]["repetition"], data["point"]["values"])
    problems = Problems()
    p = plan_point(bench, TopologySpec.model_validate(data["topology"]), point, problems)
    if p is None:
        raise ValueError("; ".join(map(str, problems.items)))
    return p


@dataclass
class Step:
    """What a step decided."""

    phase: str | None = None  # next phase (None = stay)
    reason: str = ""
    message: str = ""
    status: dict[str, Any] = field(default_factory=dict)  # other status fields to merge


@dataclass
class TrialContext:
    kube: Kube
    trial: dict[str, Any]
    kubeconfig: str | None = None
    trial_clusterrole: str | None = None
    operator_subject: dict[str, str] | None = None
    emit: Callable[[str, str, str], None] = lambda *_: None
    _plan: TrialPlan | None = None
    _rendered: Rendered | None = None

    @property
    def status(self) -> dict[str, Any]:
        return self.trial.get("status") or {}

    @property
    def instance(self) -> str | None:
        """The owning Benchmark's uid (part of the results prefix)."""
        owners = self.trial["metadata"].get("ownerReferences") or []
        return owners[0]["uid"] if owners else None

    @property
    def plan(self) -> TrialPlan:
        if self._plan is None:
            self._plan = trial_plan(self.trial)
        return self._plan

    def rendered(self, passwords: dict[str, str] | None = None) -> Rendered:
        if self._rendered is None or passwords is not None:
            st = self.status
            self._rendered = render_trial(
                self.plan,
                start_at=st.get("loadStartAt"),
                attempt=max(1, int(st.get("attempt") or 1)),
                passwords=passwords,
                results=results.target(self.kube, self.plan, self.instance),
                plan_generation=int(self.trial["spec"].get("planGeneration", 0)),
            )
        return self._rendered


def _done(ctx: TrialContext) -> set[str]:
    return set(ctx.status.get("done") or [])


def _mark(ctx: TrialContext, step: Step, item: str) -> None:
    done = sorted(_done(ctx) | set(step.status.get("done", [])) | {item})
    step.status["done"] = done


def _passwords(ctx: TrialContext) -> dict[str, str]:
    from ..render.secrets import KEY_FIELDS, keys_secret_name

    p = ctx.plan
    out = {}
    for k in KEY_FIELDS["passwords"]:
        v = ctx.kube.secret_value(keys_secret_name(p.benchmark), p.bench_namespace, k)
        if v is None:
            raise MissingSource(f"Secret {p.bench_namespace}/{keys_secret_name(p.benchmark)} lacks {k}: "
                                "the operator creates it with the Benchmark; do not edit it")
        out[k] = v
    return out


def _rolebinding(ctx: TrialContext, ns: str) -> dict[str, Any] | None:
    if not ctx.trial_clusterrole or not ctx.operator_subject:
        return None
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "wanwide-operator", "namespace": ns, "labels": ctx.plan.labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ctx.trial_clusterrole},
        "subjects": [ctx.operator_subject],
    }


# ---- phases -------------------------------------------------------------------------------

def provisioning(ctx: TrialContext) -> Step:
    step = Step()
    done = _done(ctx)
    p = ctx.plan
    if "base" not in done:
        r = ctx.rendered()
        for o in r.base:
            if o["kind"] == "Trial":
                continue
            ctx.kube.apply(o)
            if o["kind"] == "Namespace":
                rb = _rolebinding(ctx, o["metadata"]["name"])
                if rb:
                    ctx.kube.apply(rb)
        _mark(ctx, step, "base")
        ctx.emit("Provisioning", f"applied {len(r.base) - 1} objects in {len(p.namespaces)} namespaces", "Normal")
        return step
    releases = ctx.rendered(_passwords(ctx)).releases
    budget = seconds(p.spec.timeouts.provisioning)
    for wave in (0, 1):
        if f"wave{wave}" in done:
            continue
        states = [helm.BACKGROUND.poll(r, ctx.kubeconfig, budget) for r in releases if r.wave == wave]
        if any(s == "running" for s in states):
            step.message = f"helm installing keystone (wave {wave}: {len(states)} release(s); hooks run db-sync)"
            return step
        _mark(ctx, step, f"wave{wave}")
        ctx.emit("HelmInstalled", f"keystone in {len(states)} region(s)"
                 + (" (schema owner first)" if wave == 0 else ""), "Normal")
        return step
    waiting = []
    for o in ctx.rendered().base:
        if o["kind"] in DB_KINDS:
            live = ctx.kube.get(o["apiVersion"], o["kind"], o["metadata"]["name"], o["metadata"]["namespace"])
            if not readiness.dependency_ready(live):
                waiting.append(f"{o['kind']}/{o['metadata']['name']}")
    for r in p.region_names:
        ns = p.namespace(r)
        for dep in [API_SERVICE] + ([MEMCACHED] if p.spec.openstack.keystone.cache else []):
            if not readiness.deployment_available(ctx.kube.get("apps/v1", "Deployment", dep, ns)):
                waiting.append(f"{ns}/{dep}")
    if waiting:
        step.message = f"waiting for {len(waiting)}: " + ", ".join(waiting[:5]) + (" …" if len(waiting) > 5 else "")
        return step
    return Step("VerifyingNetwork", "Deployed", f"database and {len(p.regions)} Keystones ready")


def _chaos_children(ctx: TrialContext) -> list[dict[str, Any]]:
    sel = {names.L_TRIAL: ctx.plan.name}
    out = []
    for ns in ctx.plan.namespaces:
        for kind in ("NetworkChaos", "Schedule"):
            out += ctx.kube.list(CHAOS_API, kind, sel, ns)
    return out


def verifying_network(ctx: TrialContext) -> Step:
    p = ctx.plan
    if not ctx.kube.has_kind(CHAOS_API, "NetworkChaos"):
        return Step("CleaningUp", "ChaosMeshMissing", "Chaos Mesh CRDs are not installed: install Chaos Mesh first",
                    {"outcome": "Failed"})
    if p.classes and any(lst for lst in p.classes.values()):
        # Leftovers would stack with the new rules.
        stale = [c["metadata"]["name"] for c in _chaos_children(ctx)]
        if stale and "wan-injected" not in _done(ctx):
            for c in _chaos_children(ctx):
                ctx.kube.delete(c["apiVersion"], c["kind"], c["metadata"]["name"], c["metadata"]["namespace"])
            return Step(message=f"removing {len(stale)} leftover chaos objects first")
    empty = []
    for r in p.region_names:
        pods = ctx.kube.list("v1", "Pod", None, p.namespace(r))
        if not any((pod.get("status") or {}).get("phase") == "Running" for pod in pods):
            empty.append(r)
    if empty:
        return Step(message=f"no running pod yet in regions {', '.join(empty)}")
    return Step("Injecting", "NetworkReady", f"{len(p.regions)} regions up; {sum(map(len, p.classes.values()))} link classes to inject")


def injecting(ctx: TrialContext) -> Step:
    step = Step()
    wan = ctx.rendered().wan
    if "wan" not in _done(ctx):
        for o in wan:
            ctx.kube.apply(o)
        _mark(ctx, step, "wan")
        ctx.emit("Injecting", f"applied {len(wan)} NetworkChaos objects (the emulated WAN)", "Normal")
        return step
    pending = []
    for o in wan:
        live = ctx.kube.get(o["apiVersion"], o["kind"], o["metadata"]["name"], o["metadata"]["namespace"])
        if not readiness.chaos_injected(live):
            pending.append(o["metadata"]["name"])
    if pending:
        step.message = f"waiting for AllInjected on {len(pending)}: {', '.join(pending[:4])}"
        return step
    return Step("Loading", "Injected", f"Chaos Mesh reports AllInjected on {len(wan)} objects",
                {"done": sorted(_done(ctx) | {"wan-injected"})})


def loading(ctx: TrialContext) -> Step:
    st = ctx.status
    p = ctx.plan
    attempt = max(1, int(st.get("attempt") or 1))
    if not st.get("loadStartAt"):
        start = now().timestamp() + seconds(p.spec.workload.start_delay)
        import datetime as dt

        return Step(message="start time chosen", status={
            "loadStartAt": iso(dt.datetime.fromtimestamp(start, dt.UTC)), "attempt": attempt})
    step = Step()
    key = f"load-{attempt}"
    if key not in _done(ctx):
        for o in ctx.rendered().load:
            ctx.kube.apply(o)
        _mark(ctx, step, key)
        ctx.emit("Loading", f"attempt {attempt}: Rally in {len(p.load_regions)} region(s), start at {st['loadStartAt']}",
                 "Normal")
        return step
    _faults(ctx, step)
    states = {r: readiness.job_state(ctx.kube.get("batch/v1", "Job", JOB, p.namespace(r))) for r in p.load_regions}
    failed = [r for r, s in states.items() if s in ("failed", "missing")]
    if failed:
        if attempt < p.spec.runner.max_attempts:
            for r in p.load_regions:
                ctx.kube.delete("batch/v1", "Job", JOB, p.namespace(r))
            ctx.emit("LoadRetry", f"Rally failed in {', '.join(failed)}; attempt {attempt + 1} of "
                                  f"{p.spec.runner.max_attempts}", "Warning")
            return Step(message="retrying", status={"attempt": attempt + 1, "loadStartAt": None,
                                                    "done": sorted(_done(ctx) - {key})})
        return Step("CleaningUp", "LoadFailed",
                    f"Rally failed in {', '.join(failed)} after {attempt} attempt(s): see the rally Job logs",
                    {"outcome": "Failed"})
    running = [r for r, s in states.items() if s != "complete"]
    if running:
        step.message = f"Rally running in {len(running)} region(s)"
        return step
    return Step("Collecting", "LoadDone", f"Rally finished in {len(states)} region(s)")


def _faults(ctx: TrialContext, step: Step) -> None:
    """Apply timed faults when their time comes; end loss windows and restore the WAN."""
    faults = ctx.rendered().faults
    if not faults:
        return
    elapsed = (now() - parse(ctx.status["loadStartAt"])).total_seconds()
    done = _done(ctx) | set(step.status.get("done", []))
    by_name = {o["metadata"]["name"]: o for o in ctx.rendered().wan}
    for o in faults:
        ann = o["metadata"].get("annotations", {})
        name = o["metadata"]["name"]
        start = seconds(ann.get(names.A_START_AFTER, "0s"))
        if f"fault:{name}" not in done and elapsed >= start:
            for old in filter(None, ann.get(A_REPLACES, "").split(",")):
                ctx.kube.delete(CHAOS_API, "NetworkChaos", old, o["metadata"]["namespace"])
            ctx.kube.apply(o)
            _mark(ctx, step, f"fault:{name}")
            done.add(f"fault:{name}")
            ctx.emit("Fault", f"{o['kind']}/{name} started", "Normal")
        dur = ann.get(A_DURATION)
        if dur and f"fault-end:{name}" not in done and elapsed >= start + seconds(dur):
            ctx.kube.delete(CHAOS_API, "NetworkChaos", name, o["metadata"]["namespace"])
            for old in filter(None, ann.get(A_REPLACES, "").split(",")):
                if old in by_name:
                    ctx.kube.apply(by_name[old])
            _mark(ctx, step, f"fault-end:{name}")
            done.add(f"fault-end:{name}")


def collecting(ctx: TrialContext) -> Step:
    p = ctx.plan
    attempt = max(1, int(ctx.status.get("attempt") or 1))
    found, missing, uri = results.bundles(ctx.kube, p, attempt, ctx.instance)
    if missing:
        return Step(message=f"waiting for result bundles of {', '.join(missing)} in {uri}")
    return Step("CleaningUp", "Collected", f"{len(found)} bundle(s) in {uri}", {"resultsURI": uri, "outcome": "Succeeded"})


def cleaning_up(ctx: TrialContext) -> Step:
    p = ctx.plan
    step = Step()
    chaos = _chaos_children(ctx)
    if chaos:
        for c in chaos:
            if not c["metadata"].get("deletionTimestamp"):
                ctx.kube.delete(c["apiVersion"], c["kind"], c["metadata"]["name"], c["metadata"]["namespace"])
        step.message = f"removing chaos: {len(chaos)} object(s) not yet recovered"
        return step
    outcome = ctx.status.get("outcome") or "Failed"
    policy = p.spec.cleanup
    if policy == "Always" or (policy == "OnSuccess" and outcome == "Succeeded"):
        left = []
        for ns in p.namespaces:
            live = ctx.kube.get("v1", "Namespace", ns)
            if live is not None:
                left.append(ns)
                if not live["metadata"].get("deletionTimestamp"):
                    ctx.kube.delete("v1", "Namespace", ns)
        if left:
            step.message = f"deleting {len(left)} namespace(s)"
            return step
    reason = ctx.status.get("reason") if outcome == "Failed" else "Completed"
    message = ctx.status.get("outcomeMessage") if outcome == "Failed" else "chaos removed; results stored"
    return Step(outcome, reason or outcome, message or "")


PHASE_STEPS: dict[str, Callable[[TrialContext], Step]] = {
    "Provisioning": provisioning,
    "VerifyingNetwork": verifying_network,
    "Injecting": injecting,
    "Loading": loading,
    "Collecting": collecting,
    "CleaningUp": cleaning_up,
}


def step(ctx: TrialContext) -> Step:
    """One step from the Trial's current phase (Pending and terminal phases do nothing here)."""
    phase = ctx.status.get("phase") or "Pending"
    if phase not in PHASE_STEPS:
        return Step()
    at = now()
    if phase != "CleaningUp" and timed_out(phase, ctx.status.get("phaseStartTime"), ctx.plan.spec.timeouts, at):
        return Step("CleaningUp", f"{phase}Timeout",
                    f"{phase} took longer than its timeout (spec.timeouts); cleaning up", {"outcome": "Failed"})
    if phase == "CleaningUp" and timed_out(phase, ctx.status.get("phaseStartTime"), ctx.plan.spec.timeouts, at):
        left = _chaos_children(ctx)
        if left:
            return Step("Failed", "ChaosNotRecovered",
                        f"{len(left)} chaos object(s) still present after the clean-up timeout: "
                        "check Chaos Mesh; namespaces kept for inspection")
    try:
        return PHASE_STEPS[phase](ctx)
    except MissingSource as e:
        return Step("CleaningUp", "MissingSecret", str(e), {"outcome": "Failed"})
    except helm.HelmError as e:
        return Step("CleaningUp", "HelmFailed", str(e), {"outcome": "Failed"})


__all__ = ["A_PLAN_INPUT", "MARIADB_API", "Step", "TrialContext", "plan_input", "step", "trial_plan"]
