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


def chaos_stuck(obj: dict[str, Any], now: Any) -> bool:
    """A chaos object Chaos Mesh will not release: deleted more than STUCK_AFTER_S ago, still holding its
    ``chaos-mesh/records`` finalizer, and never injected anywhere (Chaos Mesh v2.8 keeps that finalizer on an
    object whose injection only ever failed, e.g. on a node without netem; nothing is there to recover)."""
    from wanwide.core.timestamps import parse

    m = obj.get("metadata") or {}
    if CHAOS_FINALIZER not in (m.get("finalizers") or []) or not m.get("deletionTimestamp"):
        return False
    if (now - parse(m["deletionTimestamp"])).total_seconds() < STUCK_AFTER_S:
        return False
    records = (((obj.get("status") or {}).get("experiment") or {}).get("containerRecords")) or []
    injected = any(ev.get("type") == "Succeeded" and ev.get("operation") == "Apply"
                   for rec in records for ev in rec.get("events") or [])
    return bool(records) and not injected and condition(obj, "AllInjected") != "True"


def chaos_failed(obj: dict[str, Any] | None) -> str | None:
    """Why Chaos Mesh could not inject ``obj`` (a Failed event of one of its pods' records), or None."""
    records = (((obj or {}).get("status") or {}).get("experiment") or {}).get("containerRecords") or []
    for rec in records:
        for ev in rec.get("events") or []:
            if ev.get("type") == "Failed" and ev.get("message"):
                return f"{rec.get('id', 'a pod')}: {ev['message']}"
    return None


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
