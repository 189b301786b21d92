"""``Deploy``, in Kubernetes: each stage of the lifecycle's deployment plan (core/lifecycle/deploy.py) as objects,
and how far it got. Pure.

- the trial's place (``namespaces``): its namespaces (each with the operator's RoleBinding right after it),
  NetworkPolicies, Secrets, the database's objects, memcached, monitors, applied once (``status.applied``); a
  namespace named like the trial's that someone else made refuses it (``NamespaceTaken``) before anything is
  applied;
- ``database``, ``openstack-db`` (render.OBJECTS: the trial's database; the control planes' own MariaDBs): its
  objects (applied with the place) Ready;
- a service deployed as a chart (``render.CHARTS``): the stage's releases, each stage by stage in hook order
  (render/chart.py); done when every hook Job is Complete, the Deployments of its regions are Available and its
  StatefulSets (the bus, the fake computes) have every replica ready.
  Every release of the trial is rendered and confined before any chart object is applied; a release wanwide
  does not apply refuses the trial (``ChartRefused``), nothing of it applied. A failed render or hook Job is
  the stage's failure: the lifecycle retries the stage (its failed Jobs deleted, to run again) or fails the
  trial. ``ahead``: the objects before each release's first hooks, :data:`AHEAD_CHUNK` releases a step
  (``status.ahead``), while the stages before it run.
"""

from __future__ import annotations

from typing import Any

from wanwide.core import lifecycle as lc
from wanwide.core.plan import monitoring
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.controller.actions import Action, Apply, Delete, Emit
from wanwide.providers.kubernetes.render import CHARTS, OBJECTS, Rendered
from wanwide.providers.kubernetes.render.chart import Chart, next_step

Obs = dict[str, Any]
DB_KINDS = {"MariaDB", "Database", "User", "Grant", "CrdbCluster"}
READY = {"database": "database_ready", "openstack-db": "openstack_db_ready"}  # stage service → what observe reads
assert READY.keys() == OBJECTS.keys()
AHEAD_CHUNK = 50  # releases whose objects go ahead per step (a step must stay short: the stage before waits for it)


def poll_s(plan: TrialPlan) -> float:
    """How often a chart stage looks at its hook Jobs: 2 s, up to 5 s at 500 regions (each look lists them all)."""
    return min(5.0, max(2.0, len(plan.regions) / 100))


def applied(status: dict[str, Any]) -> set[str]:
    return set(status.get("applied") or [])


def charted(plan: TrialPlan, status: dict[str, Any]) -> list[tuple[str, str]]:
    """The (service, region) of every chart release of the stages not done yet."""
    finished = lc.done(status)
    return [(s.service, r) for s in lc.stages(plan) if s.service in CHARTS and s.name not in finished for r in s.regions]


def _gate(plan: TrialPlan, status: dict[str, Any], obs: Obs) -> str | None:
    """Why no chart object may be applied yet: a release of the stages not done yet not rendered and confined
    (None: all are)."""
    charts = obs.get("charts") or {}
    wanted = charted(plan, status)
    left = [k for k in wanted if charts.get(k) is None]
    if left:
        return (f"rendering the charts: {len(left)} of {len(wanted)} release(s) left (none is applied before all are "
                "checked)")
    return None


def progress(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, stage: lc.Stage) -> lc.Progress:
    """How far ``stage`` is, as observed (:mod:`.observe`)."""
    if stage.service == lc.PLACE:
        taken = obs.get("namespaces_taken") or []
        if taken:
            return lc.Progress(refused=(lc.NAMESPACE_TAKEN, f"namespace(s) {', '.join(taken[:5])} exist and are not "
                                        "this trial's (wanwide changes only namespaces it made): delete or rename them"))
        return lc.Progress(done=stage.name in applied(status), waiting="applying the trial's namespaces")
    if stage.service in READY:
        ready = obs.get(READY[stage.service])
        waiting = [k for k, ok in (ready or {}).items() if not ok]
        if ready is None or waiting:  # no watch on the database operators' kinds: look again soon
            what = "the database's" if stage.service == "database" else "the control planes' databases'"
            return lc.Progress(waiting=f"waiting for {what} objects: " + ", ".join(waiting[:5]), wake_s=5)
        return lc.Progress(done=True)
    return _chart_progress(plan, status, obs, r, stage)


def _chart_progress(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, stage: lc.Stage) -> lc.Progress:
    mine = [(stage.service, r) for r in stage.regions]
    refused = obs.get("chart_refused") or {}
    if refused:  # any release of the trial: none is applied
        return lc.Progress(refused=(lc.CHART_REFUSED, next(iter(refused.values()))))
    if obs.get("missing"):
        return lc.Progress(failed=obs["missing"])
    render_failed = [why for k, why in (obs.get("render_failed") or {}).items() if k in mine]
    if render_failed:
        return lc.Progress(failed=render_failed[0])
    gate = _gate(plan, status, obs)
    if gate:
        return lc.Progress(waiting=gate, wake_s=poll_s(plan))
    charts, jobs = obs["charts"], obs.get("jobs", {})
    ahead = int((status.get("ahead") or {}).get(stage.name, 0))
    failed: list[str] = []
    waiting: dict[str, int] = {}
    for i, key in enumerate(mine):
        nxt = next_step(charts[key], jobs, ahead=i < ahead)
        failed += nxt.failed
        if not nxt.done:
            waiting[nxt.waiting] = waiting.get(nxt.waiting, 0) + 1
    if failed:
        return lc.Progress(failed=f"hook Job(s) failed: {', '.join(failed[:3])} (see kubectl logs job/NAME -n NS)")
    if waiting:
        where = ", ".join(f"{n} {s}" for s, n in sorted(waiting.items()))
        return lc.Progress(waiting=f"{len(mine)} release(s); waiting: {where}", wake_s=poll_s(plan))
    ready = {**(obs.get("deployments") or {}), **(obs.get("statefulsets") or {})}
    unavailable = [k for k in awaited(plan, stage, r, charts) if not ready.get(k)]
    if unavailable:
        return lc.Progress(waiting=f"waiting for {len(unavailable)} Deployment(s)/StatefulSet(s): "
                                   + ", ".join(unavailable[:5]) + (" …" if len(unavailable) > 5 else ""))
    return lc.Progress(done=True)


def awaited(plan: TrialPlan, stage: lc.Stage, r: Rendered, charts: dict[tuple[str, str], Chart]) -> list[str]:
    """The Deployments and StatefulSets (``namespace/name``) a chart stage waits for: its releases' and the trial's own
    Deployments in its regions (memcached)."""
    spaces = {plan.namespace(r) for r in stage.regions}
    own = [o for o in r.base if o["kind"] == "Deployment" and o["metadata"].get("namespace") in spaces]
    ours = [o for r in stage.regions for o in charts[(stage.service, r)].objects
            if o["kind"] in ("Deployment", "StatefulSet")]
    return sorted({f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in [*ours, *own]})


def act(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered, a: lc.Deploy) -> tuple[list[Action], dict[str, Any]]:
    """The objects ``a`` comes down to, and what to record (``applied``, ``ahead``)."""
    s = a.stage
    if s.service == lc.PLACE:
        return ([], {}) if s.name in applied(status) else place(plan, status, obs, r)
    if s.service not in CHARTS or _gate(plan, status, obs):
        return [], {}
    charts, jobs = obs["charts"], obs.get("jobs", {})
    keys = [(s.service, x) for x in s.regions]
    ahead = dict(status.get("ahead") or {})
    k = int(ahead.get(s.name, 0))
    if a.ahead:
        if k >= len(keys):
            return [], {}
        acts: list[Action] = [Apply(o, plan.namespace(key[1])) for key in keys[k:k + AHEAD_CHUNK]
                              for o in next_step(charts[key], {}, hooks=False).apply]
        return acts, {"ahead": {**ahead, s.name: min(len(keys), k + AHEAD_CHUNK)}}
    acts = []
    for i, key in enumerate(keys):
        nxt = next_step(charts[key], jobs, ahead=i < k)
        acts += [Apply(o, plan.namespace(key[1])) for o in nxt.apply]
        if a.retry:  # the failed hook Jobs go, to run again
            acts += [Delete("batch/v1", "Job", j.split("/", 1)[1], j.split("/", 1)[0], j.split("/", 1)[0])
                     for j in nxt.failed]
    return acts, {}


def place(plan: TrialPlan, status: dict[str, Any], obs: Obs, r: Rendered) -> tuple[list[Action], dict[str, Any]]:
    """The trial's place: each Namespace with the operator's RoleBinding there, in parallel; once all are there
    (the authorizer's cache trails new bindings), the rest."""
    rbs = obs.get("rolebindings", {})  # namespace → the operator's RoleBinding there
    first: list[Action] = []
    then: list[Action] = []
    for o in r.base:
        if o["kind"] == "Trial":
            continue
        lane = o["metadata"].get("namespace") or o["metadata"]["name"]
        if o["kind"] == "Namespace":
            first += [Apply(o, lane)] + ([Apply(rbs[lane], lane)] if lane in rbs else [])
        else:
            then.append(Apply(o, lane))
    acts = [*first, Emit("Provisioning", f"applying {len(r.base) - 1} objects in {len(plan.namespaces)} namespaces"),
            *then]
    if obs.get("monitoring_crds") is False:
        acts.append(Emit("MonitorsSkipped", monitoring.CRDS_MISSING, "Warning"))
    return acts, {"applied": sorted(applied(status) | {lc.PLACE})}


__all__ = ["AHEAD_CHUNK", "DB_KINDS", "act", "awaited", "charted", "poll_s", "progress"]
