"""Benchmark reconciliation: validate, create its Trials, start them within parallelism, sum up."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from wanwide import API_GROUP, API_VERSION
from wanwide.core import lifecycle as lc
from wanwide.core import progress
from wanwide.core.api.benchmark import Benchmark, Timeouts
from wanwide.core.api.topology import TopologySpec
from wanwide.core.api.trial import TERMINAL
from wanwide.core.api.units import seconds
from wanwide.core.lifecycle import run_key
from wanwide.core.plan import names
from wanwide.core.plan.errors import PlanError, Problem
from wanwide.core.plan.load import validation_problems, without_nulls
from wanwide.core.plan.matrix import expand
from wanwide.core.plan.trial import plan
from wanwide.core.timestamps import iso, parse
from wanwide.providers.kubernetes.controller import keys, ownership, trialstate
from wanwide.providers.kubernetes.controller.observe import running_pods_of_chaos
from wanwide.providers.kubernetes.controller.trial import A_PLAN_INPUT, owned_by, plan_input
from wanwide.providers.kubernetes.kube.client import Kube
from wanwide.providers.kubernetes.kube.readiness import (
    CHAOS_FINALIZER,
    blocked_recovery,
    chaos_orphaned,
    chaos_stuck,
    recovery_waits_on,
    terminating_why,
)
from wanwide.providers.kubernetes.render import chartsource, trial_object
from wanwide.providers.kubernetes.render.chaos import CHAOS_API
from wanwide.providers.kubernetes.render.secrets import keys_secret_name

API = f"{API_GROUP}/{API_VERSION}"


def topology_of(kube: Kube, bench: dict[str, Any], model: Benchmark) -> TopologySpec:
    if model.spec.topology is not None:
        return model.spec.topology
    ns = bench["metadata"]["namespace"]
    t = kube.get(API, "Topology", model.spec.topology_ref or "", ns)
    if t is None:
        raise PlanError([Problem("spec.topologyRef",
                                 f"Topology {model.spec.topology_ref!r} not found in namespace {ns!r}: create it")])
    from pydantic import ValidationError

    try:
        return TopologySpec.model_validate(without_nulls(t.get("spec") or {}))
    except ValidationError as e:  # stored before the CRD said so, or written around it: name it, with the fix
        where = f"Topology/{model.spec.topology_ref}"
        raise PlanError([Problem(f"spec.{p.field}", p.message, where)
                         for p in validation_problems(e)]) from None


def validate(kube: Kube, bench: dict[str, Any],
             allowed_charts: Sequence[str] = chartsource.DEFAULT_ALLOWED) -> tuple[Benchmark, TopologySpec]:
    """The models and topology, or PlanError naming every problem (a chart this operator does not render
    among them: ``allowed_charts``, its setting)."""
    from pydantic import ValidationError

    try:
        model = Benchmark.model_validate({**bench, "status": None})
    except ValidationError as e:
        raise PlanError(validation_problems(e)) from None
    os_ = model.spec.openstack
    for service in ("keystone", *(s for s in ("messaging", "placement", "glance", "nova", "neutron") if os_.enabled(s))):
        c = getattr(os_, service)
        bad = chartsource.problem(c.chart_repo, c.chart, c.chart_version, allowed_charts)
        if bad is not None:
            raise PlanError([Problem(f"spec.openstack.{service}.{bad[0]}", bad[1])])
    topo = topology_of(kube, bench, model)
    plan(model, topo)  # raises PlanError
    s3 = model.spec.results.s3
    ns = bench["metadata"]["namespace"]
    if s3 is not None and s3.secret_ref is not None:
        secret = kube.get("v1", "Secret", s3.secret_ref.name, ns)
        if secret is None:
            raise PlanError([Problem("spec.results.s3.secretRef.name",
                                     f"Secret {ns}/{s3.secret_ref.name} not found: create it with keys "
                                     f"{s3.secret_ref.access_key_key} and {s3.secret_ref.secret_key_key}")])
        for k in (s3.secret_ref.access_key_key, s3.secret_ref.secret_key_key):
            if k not in (secret.get("data") or {}):
                raise PlanError([Problem("spec.results.s3.secretRef",
                                         f"Secret {ns}/{s3.secret_ref.name} has no key {k!r}: add it")])
    pod = model.spec.runner.pod  # copied into each region's namespace: they must exist here
    if pod.service_account_name and kube.get("v1", "ServiceAccount", pod.service_account_name, ns) is None:
        raise PlanError([Problem("spec.runner.pod.serviceAccountName",
                                 f"ServiceAccount {ns}/{pod.service_account_name} not found: create it in the "
                                 "Benchmark's namespace (wanwide copies it, with its annotations, into each "
                                 "region's namespace), or check the chart's runner.pod value")])
    for i, name in enumerate(pod.image_pull_secrets or []):
        if kube.get("v1", "Secret", name, ns) is None:
            raise PlanError([Problem(f"spec.runner.pod.imagePullSecrets[{i}]",
                                     f"Secret {ns}/{name} not found: create it in the Benchmark's namespace "
                                     "(wanwide copies it into each region's namespace)")])
    return model, topo


def ensure_keys(kube: Kube, bench: dict[str, Any]) -> None:
    name = keys_secret_name(bench["metadata"]["name"])
    have = kube.get("v1", "Secret", name, bench["metadata"]["namespace"])
    if have is None:
        kube.apply(keys.secret(bench, keys.generate()))
    elif (data := keys.completed(have.get("data") or {})) is not None:
        kube.apply(keys.secret(bench, data))


def trials(kube: Kube, bench: dict[str, Any]) -> list[dict[str, Any]]:
    """The Benchmark's Trials: labelled as its own and controlled by it (its uid); a Trial carrying the label
    that it did not make is neither started, counted nor deleted."""
    uid = bench["metadata"].get("uid")
    return [t for t in kube.list(API, "Trial", benchmark_selector(bench), bench["metadata"]["namespace"])
            if uid is None or owned_by(t, uid)]


def trial_gone(kube: Kube, namespace: str, name: str, uid: str) -> bool:
    """Whether the Trial with this uid (not a namesake made since) no longer exists.

    A list by name, not a get: the operator's Role grants Trials ``list`` (its watch), and a ``get``
    granted for this rare path only would be a rule some test runs use and others do not."""
    found = kube.list(API, "Trial", namespace=namespace, fields={"metadata.name": name})
    return not any(t["metadata"].get("uid") == uid for t in found)


def benchmark_selector(bench: dict[str, Any]) -> dict[str, str]:
    """The label every object of the Benchmark carries (its name, shortened as a label value if need be)."""
    return {names.L_BENCHMARK: names.label_value(bench["metadata"]["name"])}


def with_runner_image(bench: dict[str, Any], image: str, pod: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Benchmark with ``spec.runner.image`` defaulted to the operator's image and ``spec.runner.pod``'s unset
    fields to the operator's (the chart's ``runner.pod``): a copy, the Benchmark's own values win."""
    runner = dict(bench["spec"].get("runner") or {})
    if not runner.get("image"):
        runner["image"] = image
    if pod:
        runner["pod"] = {**pod, **{k: v for k, v in (runner.get("pod") or {}).items() if v is not None}}
    return {**bench, "spec": {**bench["spec"], "runner": runner}}


def sync_trials(kube: Kube, bench: dict[str, Any], model: Benchmark, topo: TopologySpec) -> tuple[int, int]:
    """Create missing Trials; replace not-yet-started ones planned from an older generation.

    Returns (trials created or replanned, trials kept because they already started).
    """
    gen = int(bench["metadata"].get("generation") or 1)
    existing = {t["spec"]["index"]: t for t in trials(kube, bench)}
    plans = {p.index: p for p in plan(model, topo)}
    points = {pt.index: pt for pt in expand(model.spec, model.metadata.name)}
    changed, kept = 0, 0
    for idx, p in plans.items():
        cur = existing.get(idx)
        phase = ((cur or {}).get("status") or {}).get("phase") or "Pending"
        if cur is not None and int(cur["spec"].get("planGeneration", 0)) == gen:
            continue
        if cur is not None and phase != "Pending":
            kept += 1
            continue
        t = trial_object(p, gen)
        t["metadata"]["annotations"][A_PLAN_INPUT] = plan_input(bench, topo, points[idx])
        t["metadata"]["ownerReferences"] = [keys.owner(bench)]
        kube.apply(t)
        changed += 1
    for idx, cur in existing.items():
        phase = (cur.get("status") or {}).get("phase") or "Pending"
        if idx not in plans and phase == "Pending":
            kube.delete(API, "Trial", cur["metadata"]["name"], cur["metadata"]["namespace"])
    return changed, kept


def teardown(kube: Kube, bench: dict[str, Any], at: dt.datetime,
             running: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Stop the Trials first (their loops end, so no step re-creates anything), then remove every chaos
    object, then the trial namespaces. ``running``: keys of this Benchmark's Trial loops still running
    in this process (a Trial can be gone while its last step still runs).

    Returns (what is still there, namespaces terminating for longer than the clean-up
    timeout: no longer waited for, so the Benchmark's deletion completes).
    """
    sel = benchmark_selector(bench)
    left: list[str] = []
    for t in trials(kube, bench):
        left.append(f"Trial/{t['metadata']['name']}")
        if not t["metadata"].get("deletionTimestamp"):
            kube.delete(API, "Trial", t["metadata"]["name"], t["metadata"]["namespace"])
    left += [f"Trial/{k.split('/', 1)[1]} (its last step)" for k in running
             if f"Trial/{k.split('/', 1)[1]}" not in left]
    if left:
        return left, []
    tag = "-" + names.bench_tag(bench["metadata"]["namespace"], bench["metadata"]["name"]) + "-t"
    probes = names.preflight_namespace(bench["metadata"]["namespace"], bench["metadata"]["name"])
    namespaces = [n for n in kube.list("v1", "Namespace", sel)
                  if (tag in n["metadata"]["name"] or n["metadata"]["name"] == probes)
                  and ownership.namespace_ours(n, bench["metadata"].get("uid"))]  # made by this Benchmark
    mine = {n["metadata"]["name"] for n in namespaces}
    for ns in namespaces:
        if not kube.serves(CHAOS_API, "NetworkChaos"):
            continue
        chaos = kube.list(CHAOS_API, "NetworkChaos", sel, ns["metadata"]["name"])
        running = running_pods_of_chaos(kube, chaos)
        for c in chaos:
            left.append(f"NetworkChaos/{c['metadata']['name']}")
            if not c["metadata"].get("deletionTimestamp"):
                kube.delete(CHAOS_API, "NetworkChaos", c["metadata"]["name"], ns["metadata"]["name"])
            elif chaos_stuck(c, at) or chaos_orphaned(c, running, at):
                # never injected, or its pods left to recover finished: Chaos Mesh keeps its finalizer for ever
                kube.drop_finalizer(c, CHAOS_FINALIZER)
        waits = {p for c in chaos for p in recovery_waits_on(c) if p.partition("/")[0] in mine}
        if not waits or not kube.serves(CHAOS_API, "PodNetworkChaos"):
            continue
        pods = {p: o for p in sorted(waits)
                if (o := kube.get(CHAOS_API, "PodNetworkChaos", p.partition("/")[2], p.partition("/")[0]))}
        for pnc in blocked_recovery(chaos, pods, at):  # a pod Chaos Mesh cannot sync: its recovery waits forever
            kube.delete(CHAOS_API, "PodNetworkChaos", pnc["metadata"]["name"], pnc["metadata"]["namespace"])
    if left:
        return left, []
    limit = seconds(Timeouts.model_validate((bench.get("spec") or {}).get("timeouts") or {}).cleaning_up)
    stuck: list[str] = []
    for ns in namespaces:
        m = ns["metadata"]
        since = m.get("deletionTimestamp")
        if since and (at - parse(since)).total_seconds() > limit:  # terminating too long: not ours to wait for
            stuck.append(f"Namespace/{m['name']}" + (f" ({why})" if (why := terminating_why(ns)) else ""))
            continue
        left.append(f"Namespace/{m['name']}")
        if not since:
            kube.delete("v1", "Namespace", m["name"])
    return left, stuck


Post = Callable[[dict[str, Any], lc.Event], None]


def start_trial(kube: Kube, trial: dict[str, Any], at: dt.datetime, post: Post = lambda *_: None) -> None:
    """Its turn has come: the lifecycle's start, recorded with its reducer (``trial``'s status too), and said."""
    status = trial.get("status") or {}
    new, events = lc.apply(status, lc.decide(None, status, lc.Seen(start=True), at), at)
    kube.patch_status(API, "Trial", trial["metadata"]["name"], trial["metadata"]["namespace"],
                      trialstate.status_patch(status, new, trial["metadata"].get("generation"), at))
    trial["status"] = new
    for e in events:  # a listed object may lack its kind: the event names it
        post({"apiVersion": API, "kind": "Trial", **trial}, e)


def schedule(kube: Kube, bench: dict[str, Any], at: dt.datetime, start: bool = True,
             ts: list[dict[str, Any]] | None = None, failed: str | None = None,
             post: Post = lambda *_: None) -> tuple[list[str], dict[str, Any]]:
    """Start pending trials within parallelism (none unless ``start``: the preflight holds them); the
    Benchmark's status fields that changed. ``ts``: its Trials, when already listed; ``failed``: the
    preflight gave up, saying this (the Benchmark fails, no trial having started); ``post``: says an event of a
    Trial's lifecycle.

    Returns (names of the trials started, status patch).
    """
    status = bench.get("status") or {}
    ts = trials(kube, bench) if ts is None else ts
    parallelism = int((bench["spec"].get("matrix") or {}).get("parallelism", 1))
    started = []
    for t in trialstate.to_start(ts, parallelism) if start else []:
        start_trial(kube, t, at, post)
        started.append(t["metadata"]["name"])
    s = summary(bench, ts, at)
    reason, message = s["phase"], f"{s['progress']} trials done, {s['trials']['failed']} failed"
    if failed and not started and s["phase"] == "Pending":
        s["phase"], reason, message = "Failed", "PreflightFailed", failed
    patch = {k: v for k, v in s.items() if status.get(k) != v}
    final = s["phase"] in ("Succeeded", "Failed")
    if final and not status.get("completionTime"):
        patch["completionTime"] = iso(at)
    elif not final and status.get("completionTime"):  # failed by its preflight, then its spec fixed
        patch["completionTime"] = None
    conds = trialstate.outcome_conditions(list(status.get("conditions") or []), s["phase"], reason, message,
                                          bench["metadata"].get("generation"), at)
    if conds != (status.get("conditions") or []):
        patch["conditions"] = conds
    return started, patch


def summary(bench: dict[str, Any], ts: list[dict[str, Any]], at: dt.datetime | None = None) -> dict[str, Any]:
    c = trialstate.counts(ts)
    uri = ""
    for t in ts:
        u = (t.get("status") or {}).get("resultsURI")
        if u:
            uri = u.rstrip("/").rsplit("/", 1)[0] + "/"  # the benchmark's prefix (…/<benchmark>/)
            break
    return {
        "trials": c,
        "progress": f"{c['succeeded'] + c['failed']}/{c['total']}",
        "phase": trialstate.benchmark_phase(c),
        "resultsURI": uri or None,
        **swept(ts),
        **(time_left(bench, ts, at) if at is not None else {}),
    }


def swept(ts: list[dict[str, Any]]) -> dict[str, Any]:
    """``backend``, ``load``: the values the trials run with (swept ones joined, ``matrix (N)`` beyond a
    column's width); ``sweep``: every parameter that varies, with its values."""
    points = [t["spec"].get("parameters") or {} for t in ts]
    return {"backend": progress.shown(progress.values_of(points, "backend")),
            "load": progress.shown(progress.values_of(points, "load")), "sweep": progress.sweep(points)}


def time_left(bench: dict[str, Any], ts: list[dict[str, Any]], at: dt.datetime) -> dict[str, Any]:
    """``timeLeft`` (``1h12m``, ``unknown`` before a trial is done) and ``estimatedCompletionTime``, from the
    trials done and their times (core/progress.py)."""
    done, running, pending = [], [], []
    for t in sorted(ts, key=lambda t: run_key(t["spec"].get("position"), t["spec"]["index"])):
        st, key = t.get("status") or {}, progress.point_key(t["spec"].get("parameters") or {})
        phase = st.get("phase") or "Pending"
        if phase in TERMINAL and st.get("startTime") and st.get("completionTime"):
            done.append((key, (parse(st["completionTime"]) - parse(st["startTime"])).total_seconds()))
        elif phase == "Pending":
            pending.append(key)
        elif phase not in TERMINAL:
            running.append((key, (at - parse(st["startTime"])).total_seconds() if st.get("startTime") else 0.0))
    parallelism = int((bench["spec"].get("matrix") or {}).get("parallelism", 1))
    left = progress.time_left(done, running, pending, parallelism)
    eta = None
    if left is not None and (running or pending):  # to the minute: the status changes once a minute at most
        end = at + dt.timedelta(seconds=left)
        eta = iso(end.replace(second=0, microsecond=0) + dt.timedelta(minutes=1 if (end.second or end.microsecond) else 0))
    return {"timeLeft": progress.duration_text(left), "estimatedCompletionTime": eta}
