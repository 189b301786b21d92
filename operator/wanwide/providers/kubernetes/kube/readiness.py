"""Is a dependency ready? Judged from conditions and status, as a person would."""

from __future__ import annotations

from typing import Any


def condition(obj: dict[str, Any] | None, ctype: str) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status")
    return None


def deployment_available(d: dict[str, Any] | None) -> bool:
    if not d:
        return False
    want = (d.get("spec") or {}).get("replicas", 1)
    st = d.get("status") or {}
    return (st.get("availableReplicas") or 0) >= want and condition(d, "Available") == "True"


def statefulset_ready(d: dict[str, Any] | None) -> bool:
    """Every replica of the current revision ready (a StatefulSet has no Available condition)."""
    if not d:
        return False
    want = (d.get("spec") or {}).get("replicas", 1)
    st = d.get("status") or {}
    current = not st.get("updateRevision") or st.get("currentRevision") == st.get("updateRevision")
    return (st.get("readyReplicas") or 0) >= want and (st.get("replicas") or 0) >= want and current \
        and (st.get("observedGeneration") or 0) >= ((d.get("metadata") or {}).get("generation") or 0)


def job_state(j: dict[str, Any] | None) -> str:
    """missing | running | complete | failed | stopped (failed by a rule of its ``podFailurePolicy``:
    a runner that measured but could not store its results)."""
    if not j:
        return "missing"
    if condition(j, "Complete") == "True" or condition(j, "SuccessCriteriaMet") == "True":
        return "complete"
    for ctype in ("Failed", "FailureTarget"):
        c = next((c for c in (j.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None)
        if c is not None and c.get("status") == "True":
            return "stopped" if c.get("reason") == "PodFailurePolicy" else "failed"
    return "running"


def dependency_ready(obj: dict[str, Any] | None) -> bool:
    """MariaDB/Database/User/Grant: Ready=True; CrdbCluster: clusterStatus Finished."""
    if not obj:
        return False
    if obj["kind"] == "CrdbCluster":
        return ((obj.get("status") or {}).get("clusterStatus") == "Finished")
    return condition(obj, "Ready") == "True"


def chaos_injected(obj: dict[str, Any] | None) -> bool:
    return condition(obj, "AllInjected") == "True"


CHAOS_FINALIZER = "chaos-mesh/records"
STUCK_AFTER_S = 30.0


RECOVER_WAIT = "Injected/Wait"  # a record whose recovery waits for its pod's PodNetworkChaos to sync


def _held(obj: dict[str, Any], now: Any) -> bool:
    """Deleted more than STUCK_AFTER_S ago and still holding Chaos Mesh's ``chaos-mesh/records`` finalizer."""
    from wanwide.core.timestamps import parse

    m = obj.get("metadata") or {}
    if CHAOS_FINALIZER not in (m.get("finalizers") or []) or not m.get("deletionTimestamp"):
        return False
    return (now - parse(m["deletionTimestamp"])).total_seconds() >= STUCK_AFTER_S


def _records(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return (((obj.get("status") or {}).get("experiment") or {}).get("containerRecords")) or []


def chaos_stuck(obj: dict[str, Any], now: Any) -> bool:
    """A chaos object Chaos Mesh will not release: held (see :func:`_held`) and never injected anywhere
    (Chaos Mesh v2.8 keeps that finalizer on an object whose injection only ever failed, e.g. on a node
    without netem; nothing is there to recover)."""
    records = _records(obj)
    injected = any(ev.get("type") == "Succeeded" and ev.get("operation") == "Apply"
                   for rec in records for ev in rec.get("events") or [])
    return _held(obj, now) and bool(records) and not injected and condition(obj, "AllInjected") != "True"


def injected_at(obj: dict[str, Any]) -> Any:
    """When Chaos Mesh had applied ``obj`` to all its pods so far (the latest of each record's first Succeeded
    Apply event), or None."""
    from wanwide.core.timestamps import parse

    firsts = []
    for rec in _records(obj):  # each pod's first apply (Chaos Mesh applies again to a pod that restarted)
        times = [parse(ev["timestamp"]) for ev in rec.get("events") or []
                 if ev.get("type") == "Succeeded" and ev.get("operation") == "Apply" and ev.get("timestamp")]
        if times:
            firsts.append(min(times))
    return max(firsts) if firsts else None


RECOVERED = "Not Injected"


def chaos_orphaned(obj: dict[str, Any], running: set[str], now: Any) -> bool:
    """A chaos object Chaos Mesh will not release: held (see :func:`_held`), and every pod it has not recovered
    no longer runs (finished or gone; ``running``: the ids ``namespace/name`` of those that do). Chaos Mesh
    cannot recover a pod without a running container ("no running task found", chaos-mesh#4827: a Rally pod
    that finished inside a partition) and keeps its finalizer for ever; the pod's network went with its
    sandbox, so nothing is left to recover."""
    left = unrecovered(obj)
    return _held(obj, now) and bool(left) and all(pod_of(i) not in running for i in left)


def pod_of(record_id: str) -> str:
    """``namespace/name`` of a record's pod (a record's id may go on with the container's name)."""
    return "/".join(record_id.split("/")[:2])


def unrecovered(obj: dict[str, Any]) -> list[str]:
    """The pods (``namespace/name``) a deleted chaos object has not recovered yet."""
    if not (obj.get("metadata") or {}).get("deletionTimestamp"):
        return []
    return sorted({r["id"] for r in _records(obj) if r.get("phase") != RECOVERED and r.get("id")})


def recovery_waits_on(obj: dict[str, Any]) -> list[str]:
    """The pods (``namespace/name``) whose PodNetworkChaos must sync before Chaos Mesh recovers a deleted
    chaos object (its records in Injected/Wait)."""
    if not (obj.get("metadata") or {}).get("deletionTimestamp"):
        return []
    return sorted({r["id"] for r in _records(obj) if r.get("phase") == RECOVER_WAIT and r.get("id")})


def blocked_recovery(chaos: list[dict[str, Any]], pod_chaos: dict[str, dict[str, Any]], now: Any
                     ) -> list[dict[str, Any]]:
    """The PodNetworkChaos objects that keep held chaos objects from being recovered: Chaos Mesh's last sync of
    the pod failed (``status.failedMessage``), so the recovery waits forever — e.g. two objects sharing a pod on
    a node without netem, each one's recovery re-syncing the other's delay. Deleting such a PodNetworkChaos
    (per pod, ours in a trial namespace) lets Chaos Mesh record the pod recovered and drop its finalizer; the
    pod's last sync failed, so the rules it would remove were not set by it. ``pod_chaos``: by pod id."""
    out: dict[str, dict[str, Any]] = {}
    for c in chaos:
        if not _held(c, now):
            continue
        for pid in recovery_waits_on(c):
            pnc = pod_chaos.get(pid)
            if pnc is not None and ((pnc.get("status") or {}).get("failedMessage")):
                out[pid] = pnc
    return [out[k] for k in sorted(out)]


CHAOS_RETRY_S = 120.0  # how long a pod's injection may keep failing while Chaos Mesh retries it


def chaos_failing(obj: dict[str, Any] | None) -> tuple[str, Any] | None:
    """The first of ``obj``'s pod records whose latest event is a Failed one: ``id: message``, and when that run
    of failures began (its first Failed event after the record's last Succeeded one; None: not stamped).
    Chaos Mesh retries a failed apply or recover (with a growing backoff) and appends a Succeeded event once
    it takes: a Failed event followed by a Succeeded one is history, not a failure."""
    from wanwide.core.timestamps import parse

    for rec in _records(obj or {}):
        events = rec.get("events") or []
        if not events or events[-1].get("type") != "Failed":
            continue
        run = []
        for ev in reversed(events):
            if ev.get("type") != "Failed":
                break
            run.append(ev)
        msg = next((ev["message"] for ev in run if ev.get("message")), "failed (no message)")
        stamp = run[-1].get("timestamp")
        return f"{rec.get('id', 'a pod')}: {msg}", (parse(stamp) if stamp else None)
    return None


def chaos_failed(obj: dict[str, Any] | None, now: Any, retry_s: float = CHAOS_RETRY_S) -> str | None:
    """Why Chaos Mesh could not inject ``obj``: one of its pods' injection has failed for ``retry_s`` or longer
    (or without a time stamp to tell), or None. A shorter run of failures is Chaos Mesh retrying — e.g. a pod
    whose container restarted in the second chaos-daemon entered its network namespace (its PID was gone:
    ``/proc/0/ns/net``); the next apply finds the new one."""
    got = chaos_failing(obj)
    if got is None:
        return None
    why, since = got
    return why if since is None or (now - since).total_seconds() >= retry_s else None


def terminating_why(ns: dict[str, Any]) -> str:
    """What keeps a terminating namespace (its controller's conditions), or ""."""
    conds = (ns.get("status") or {}).get("conditions") or []
    return "; ".join(c.get("message", "") for c in conds
                     if c.get("status") == "True" and c.get("type") in REMAINING and c.get("message"))


REMAINING = ("NamespaceContentRemaining", "NamespaceFinalizersRemaining", "NamespaceDeletionContentFailure",
             "NamespaceDeletionDiscoveryFailure")


def unschedulable(pods: list[dict[str, Any]], now: Any) -> tuple[str, float, str, dict[str, str]] | None:
    """The pod the scheduler has refused longest (PodScheduled False, reason Unschedulable): its
    ``namespace/name``, seconds since it was refused, the scheduler's message and its nodeSelector."""
    from wanwide.core.timestamps import parse

    worst: tuple[str, float, str, dict[str, str]] | None = None
    for p in pods:
        c = next((c for c in (p.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if not c or c.get("status") != "False" or c.get("reason") != "Unschedulable":
            continue
        m = p.get("metadata") or {}
        since = c.get("lastTransitionTime") or m.get("creationTimestamp")
        waited = max(0.0, (now - parse(since)).total_seconds()) if since else 0.0
        if worst is None or waited > worst[1]:
            sel = (p.get("spec") or {}).get("nodeSelector") or {}
            worst = (f"{m.get('namespace')}/{m.get('name')}", waited, c.get("message") or "", dict(sel))
    return worst
