"""The chart grants the operator what it uses, no more: its ServiceAccount's requests in this
session's audit log against the rules ``helm template`` renders.

The operator tests run the operator as the chart's ServiceAccount
``wanwide-system/wanwide`` (tests/cluster/operator_env.py); the test cluster's API
server logs that group's requests (hack/testcluster/audit-policy.yaml). Marked ``audit``:
it runs after every other test of the session (tests/cluster/conftest.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.operator_env import RELEASE, SYSTEM_NS, USER, fullname, session_events

pytestmark = [pytest.mark.cluster, pytest.mark.audit]
CHART = Path(__file__).resolve().parents[2] / "charts" / "wanwide"
RBAC = "rbac.authorization.k8s.io"
OWN_BINDING = "wanwide-operator"  # the operator's RoleBinding in each trial namespace
# Granted but not exercised by the cluster tests: (role, apiGroups, resources, verbs, why); an
# entry covers what its product names and is granted. Roles: "main" (ClusterRole), "watch"
# (Role in each watched namespace), "trial" (ClusterRole bound in each trial namespace).
UNEXERCISED: list[tuple[str, list[str], list[str], list[str], str]] = [
    ("trial", ["", "extensions", "batch", "apps"], ["services", "endpoints", "jobs", "pods"], ["get", "list"],
     "openstack-helm's dependency-check Roles grant these: creating them needs the operator to hold "
     "the same (RBAC escalation check)"),
    ("trial", ["crdb.cockroachlabs.com", "monitoring.coreos.com"], ["crdbclusters", "servicemonitors"],
     ["get", "create", "patch"], "the cockroachdb backend; the cluster tests run mariadb and galera"),
    ("trial", ["chaos-mesh.org"], ["podnetworkchaos"], ["get", "delete"],
     "a pod Chaos Mesh cannot sync blocks the recovery of deleted chaos (a node without netem); only real Chaos "
     "Mesh on the real node does that (tests/cluster/test_e2e_real.py::test_a_delay_the_node_cannot_inject_fails_"
     "the_trial_saying_why; decisions in tests/test_phase_decisions.py)"),
    ("trial", ["chaos-mesh.org"], ["networkchaos"], ["update"],
     "never sent by the operator: Chaos Mesh's admission webhook (vauth, pkg/webhook/validate_auth.go: sarVerb) "
     "checks 'update' by a SubjectAccessReview for every change to an existing object; without it the release of a "
     "finished probe's chaos (its finalizer dropped) was refused on the VM node (stop 55); kwok has no such webhook"),
    ("watch", [""], ["configmaps"], ["get"],
     "results.objectBucketClaim: the bucket's ConfigMap (providers/kubernetes/controller/results.py); the tests use results.s3"),
]
# (role, first resource) of the entries above that a test marked ``extended`` exercises (hack/test.sh --extended):
# in a session that ran one, such an entry may be used, so it is not called stale.
BY_EXTENDED: set[tuple[str, str]] = set()  # none since the Nova deploy test gates CI (stop 57)


@dataclass(frozen=True)
class Request:
    """One authorization the API server made for the operator (``verb`` on ``resource``)."""

    at: datetime
    namespace: str | None
    group: str
    resource: str  # with "/subresource"
    verb: str
    name: str


LAG_S = 10  # the authorizer's RBAC cache trails a new RoleBinding by up to this (seen: a few hundred ms)


def api_server_windows(state: Path) -> list[tuple[datetime, datetime]]:
    """When each API server of this cluster was starting: from its start until ``LAG_S`` after it was
    ready (``hack/testcluster.sh`` writes ``apiserver-starts``). Until its RBAC cache has synced, a new
    API server refuses requests its rules allow (kubernetes/kubernetes#121635)."""
    f = state / "apiserver-starts"
    out, start = [], None
    for line in f.read_text().splitlines() if f.exists() else []:
        what, ts = line.split()
        if what == "start":
            start = datetime.fromisoformat(ts)
        elif what == "ready" and start:
            out.append((start, datetime.fromisoformat(ts) + timedelta(seconds=LAG_S)))
            start = None
    return out


def refused(events: list[dict[str, Any]], starting: Sequence[tuple[datetime, datetime]] = ()) -> list[str]:
    """Requests the API server refused, except (a) the ones refused only while the operator's RoleBinding
    in that namespace was younger than ``LAG_S`` and allowed when retried (RBAC cache lag), (b) the
    ones into a namespace the operator had already deleted (terminating: the namespace controller removes
    the RoleBinding with the rest; a trial step still in flight there is refused) and (c) the ones
    refused while an API server was ``starting`` and allowed when retried later (same verb and path; a
    watch resumes from another resourceVersion). None of these is a missing rule."""
    def at(e: dict[str, Any]) -> datetime:
        return datetime.fromisoformat(e["requestReceivedTimestamp"])

    def forbid(e: dict[str, Any]) -> bool:
        return e.get("annotations", {}).get("authorization.k8s.io/decision") == "forbid"

    def path(e: dict[str, Any]) -> tuple[str, str]:
        return e["verb"], e["requestURI"].split("?")[0]

    bound = {}  # namespace -> when the operator's RoleBinding there was first written
    deleted = {}  # namespace -> when the operator deleted it
    for e in events:
        o = e.get("objectRef") or {}
        if (o.get("resource"), e["verb"]) == ("namespaces", "delete") and not forbid(e):
            deleted.setdefault(o.get("name"), at(e))
        if (o.get("resource"), o.get("name")) == ("rolebindings", OWN_BINDING) and not forbid(e):
            bound.setdefault(o.get("namespace"), at(e))
    out = set()
    for e in events:
        if not forbid(e):
            continue
        ns = (e.get("objectRef") or {}).get("namespace")
        key = (e["verb"], e["requestURI"])
        young = ns in bound and 0 <= (at(e) - bound[ns]).total_seconds() <= LAG_S
        retried = any(not forbid(x) and (x["verb"], x["requestURI"]) == key and at(x) > at(e) for x in events)
        terminating = ns in deleted and at(e) >= deleted[ns]
        restarting = any(a <= at(e) <= b for a, b in starting) and any(
            not forbid(x) and path(x) == path(e) and at(x) > at(e) for x in events)
        if not ((young and retried) or terminating or restarting):
            out.add(f"{e['verb']} {e['requestURI']}")
    return sorted(out)


def requests_of(e: dict[str, Any]) -> list[Request]:
    """What the request needed: its verb, and what the API server checks inside it."""
    o = e.get("objectRef")
    if not o:  # discovery, /version: the default system:discovery role
        return []
    res = o["resource"] + (f"/{o['subresource']}" if o.get("subresource") else "")
    ns = None if res == "namespaces" else o.get("namespace")  # the API server files a Namespace under itself
    r = Request(datetime.fromisoformat(e["requestReceivedTimestamp"]), ns, o.get("apiGroup", ""),
                res, e["verb"], o.get("name", ""))
    out = [r]
    created = e.get("responseStatus", {}).get("code") == 201
    if r.verb == "patch" and created:  # a server-side apply that creates is authorized as create too
        out.append(Request(r.at, r.namespace, r.group, res, "create", r.name))
    if (r.group, res, r.name) == (RBAC, "rolebindings", OWN_BINDING) and r.verb in ("create", "patch"):
        out.append(Request(r.at, r.namespace, RBAC, "clusterroles", "bind", f"{fullname(RELEASE)}-trial"))
    return out


def grants(rules: list[dict[str, Any]], r: Request) -> bool:
    return any(
        (r.group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
        and (r.resource in rule.get("resources", []) or "*" in rule.get("resources", []))
        and (r.verb in rule["verbs"] or "*" in rule["verbs"])
        and (not rule.get("resourceNames") or r.name in rule["resourceNames"])
        for rule in rules)


def triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, res, v) for rule in rules for g in rule["apiGroups"] for res in rule["resources"] for v in rule["verbs"]}


def chart_rules(tc) -> dict[str, list[dict[str, Any]]]:
    """The rules as tests/cluster/operator_env.install_rbac applies them (one watched namespace)."""
    out = tc.helm("template", RELEASE, str(CHART), "--namespace", SYSTEM_NS, "--set", "watchNamespaces[0]=w").stdout
    full = fullname(RELEASE)
    names = {("ClusterRole", full): "main", ("Role", f"{full}-watch"): "watch", ("ClusterRole", f"{full}-trial"): "trial"}
    roles = {names[(d["kind"], d["metadata"]["name"])]: d["rules"] for d in yaml.safe_load_all(out)
             if d and (d["kind"], d["metadata"].get("name")) in names}
    assert sorted(roles) == ["main", "trial", "watch"], sorted(roles)
    return roles


def credit(roles: dict[str, list[dict[str, Any]]], reqs: list[Request]) -> dict[str, dict[tuple, bool]]:
    """Per role, the (group, resource, verb) it authorized, each with whether some request needed
    it cluster-wide. A namespaced grant is credited before the ClusterRole: the watch Role in
    namespaces where the operator watches Benchmarks, the trial ClusterRole in a trial namespace
    from the moment the operator's RoleBinding there exists."""
    watched = {r.namespace for r in reqs if r.group == "wanwide.io" and r.resource == "benchmarks"
               and r.verb == "watch" and r.namespace}
    bound: dict[str, datetime] = {}
    for r in sorted(reqs, key=lambda r: r.at):
        if (r.group, r.resource, r.name) == (RBAC, "rolebindings", OWN_BINDING) and r.namespace not in bound:
            bound[r.namespace] = r.at
    used: dict[str, dict[tuple, bool]] = {k: {} for k in roles}
    for r in reqs:
        key = (r.group, r.resource, r.verb)
        in_trial = r.namespace in bound and r.at > bound[r.namespace]
        narrow = [k for k, ok in (("watch", r.namespace in watched), ("trial", in_trial)) if ok and grants(roles[k], r)]
        for k in narrow:
            used[k][key] = used[k].get(key, False)
        if not narrow and grants(roles["main"], r):
            namespaceable = r.namespace in watched or in_trial
            used["main"][key] = used["main"].get(key, False) or not namespaceable
    return used


def test_chart_rbac_is_what_the_operator_uses(testcluster, session_start, request):
    tc = testcluster
    events = list(session_events(tc.state, session_start))
    if not events:
        pytest.skip(f"no request of {USER} in this session's audit log: run this test in one session with "
                    "the operator tests, e.g. pytest -m cluster tests/cluster/test_operator.py "
                    "tests/cluster/test_operator_resilience.py tests/cluster/test_rbac.py")
    denied = refused(events, api_server_windows(tc.state))
    assert not denied, "the operator was refused:\n" + "\n".join(denied)

    roles = chart_rules(tc)
    reqs = [r for e in events for r in requests_of(e)]
    used = credit(roles, reqs)
    ungranted = sorted({(r.group, r.resource, r.verb) for r in reqs}
                       - {k for per in used.values() for k in per})
    assert not ungranted, f"used, allowed by something outside the chart: {ungranted}"

    unused = {(role, *t) for role, rules in roles.items() for t in triples(rules) if t not in used[role]}
    entries = [{(role, g, res, v) for g in gs for res in rs for v in vs} for role, gs, rs, vs, _ in UNEXERCISED]
    extended = any(item.get_closest_marker("extended") for item in request.session.items)
    stale = [UNEXERCISED[i][:4] for i, e in enumerate(entries)
             if not e & unused and not (extended and (UNEXERCISED[i][0], UNEXERCISED[i][2][0]) in BY_EXTENDED)]
    assert not stale, f"allow-list entries with nothing granted and unused left: {stale}"
    unused = sorted(unused - set().union(*entries))
    assert not unused, "granted, never used by the operator (drop them, or allow-list with a reason):\n" + \
        "\n".join(map(str, unused))
    local = sorted(t for t, needed in used["main"].items() if not needed)
    assert not local, ("granted cluster-wide, used only where a namespaced role applies "
                       f"(move them to the watch or trial rules): {local}")
    print("used:\n" + "\n".join(f"{role}: {t}" for role, per in used.items() for t in sorted(per)))


def test_refusals_while_an_api_server_starts_count_only_when_allowed_later(tmp_path):
    """The audit check forgives a restarting API server only what it allowed once it had synced."""
    (tmp_path / "apiserver-starts").write_text(
        "start 2026-01-01T10:00:00.000000Z\nready 2026-01-01T10:00:05.000000Z\n"
        "start 2026-01-01T11:00:00.000000Z\n")  # a start that never became ready: no window
    windows = api_server_windows(tmp_path)
    assert [(a.minute, (b - a).total_seconds()) for a, b in windows] == [(0, 5 + LAG_S)]

    def ev(t: str, uri: str, ok: bool) -> dict[str, Any]:
        return {"requestReceivedTimestamp": f"2026-01-01T{t}Z", "verb": "watch", "requestURI": uri,
                "objectRef": {"resource": "jobs", "namespace": "n"},
                "annotations": {"authorization.k8s.io/decision": "allow" if ok else "forbid"}}

    jobs, pods = "/apis/batch/v1/namespaces/n/jobs", "/api/v1/namespaces/n/pods"
    events = [ev("10:00:03", jobs + "?resourceVersion=1", False),  # starting, allowed later: forgiven
              ev("10:00:09", pods + "?resourceVersion=1", False),  # starting, never allowed: a missing rule
              ev("10:00:20", jobs + "?resourceVersion=2", False),  # after the window: counts
              ev("10:00:30", jobs + "?resourceVersion=3", True)]
    assert refused(events, windows) == [f"watch {pods}?resourceVersion=1", f"watch {jobs}?resourceVersion=2"]
    assert len(refused(events)) == 3  # without the windows nothing is forgiven
