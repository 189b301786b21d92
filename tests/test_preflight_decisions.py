"""The operator's preflight (a Benchmark's first phase): which of the doctor's checks it runs, when its
verdict holds the trials, and the netem probe it runs as Jobs. The API-server side runs on the kwok tier
(tests/cluster/test_preflight.py) and on the real node (tests/cluster/test_e2e_real.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.test_doctor_checks import _node, ready
from wanwide.core.timestamps import iso
from wanwide.providers.kubernetes.controller import benchmark as bm
from wanwide.providers.kubernetes.controller import preflight
from wanwide.providers.kubernetes.doctor import checks
from wanwide.providers.kubernetes.doctor.checks import FAIL, OK, WARN, Check

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
BENCH = {"metadata": {"name": "b", "namespace": "lab", "generation": 3}, "spec": {}}


def test_the_operator_checks_what_a_benchmark_needs_not_itself():
    lines = checks.for_benchmark(ready(), ["galera"], chaos=True, netem_needed=True)
    assert [c.what for c in lines] == ["Chaos Mesh", "chaos-daemon on every region node", "netem on every region node",
                                       "mariadb-operator", "storage for Galera", "nodes for the placement",
                                       "results store"]
    assert all(c.state == OK for c in lines), checks.table(lines)
    plain = [c.what for c in checks.for_benchmark(ready(), ["mariadb"], chaos=False, netem_needed=False)]
    assert plain == ["mariadb-operator", "nodes for the placement", "results store"]  # no link shaped: no chaos
    # a partition alone: Chaos Mesh (it cuts with iptables and ipset), not netem
    cut = [c.what for c in checks.for_benchmark(ready(), ["mariadb"], chaos=True, netem_needed=False)]
    assert "Chaos Mesh" in cut and "netem on every region node" not in cut


def test_a_backend_of_the_matrix_without_its_operator_fails_once_per_operator():
    o = ready()
    o.served["MariaDB"] = False
    lines = checks.for_benchmark(o, ["galera", "mariadb"], chaos=False, netem_needed=False)
    mo = [c for c in lines if c.what == "mariadb-operator"]
    assert len(mo) == 1 and mo[0].state == FAIL and "MariaDB is not served" in mo[0].detail


def test_nodes_the_region_pods_cannot_use_host_no_region():
    o = ready()
    o.regions = {}
    o.nodes.append({**_node("cordoned"), "spec": {"unschedulable": True}})
    o.nodes.append({**_node("gpu"), "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}})
    o.nodes.append({**_node("soft"), "spec": {"taints": [{"key": "x", "effect": "PreferNoSchedule"}]}})
    assert [n["metadata"]["name"] for n in checks.hosts(o)] == ["n1", "n2", "n3", "soft"]
    o.tolerations = [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]
    assert "gpu" in [n["metadata"]["name"] for n in checks.hosts(o)]
    o.tolerations = [{"key": "gpu", "operator": "Equal", "value": "no"}]
    assert "gpu" not in [n["metadata"]["name"] for n in checks.hosts(o)]
    o.tolerations = [{"operator": "Exists"}]
    assert "gpu" in [n["metadata"]["name"] for n in checks.hosts(o)]


def test_a_failing_check_holds_the_trials_and_says_what_to_fix():
    found = [Check("Chaos Mesh", OK, "served"),
             Check("netem on every region node", FAIL, "unusable on n2: Error: Specified qdisc kind is unknown.",
                   "install sch_netem")]
    ok, status, reason, message = preflight.verdict(found, "Enforce")
    assert (ok, status, reason) == (False, "False", "Failed")
    assert "1 of 2 check(s) failed" in message and "n2" in message and "(fix: install sch_netem)" in message
    assert f"every {preflight.RECHECK_S:.0f} s" in message
    ok, status, reason, message = preflight.verdict(found, "Warn")
    assert (ok, status, reason) == (True, "True", "Warned") and "n2" in message
    ok, status, reason, message = preflight.verdict([found[0], Check("storage for Galera", WARN, "no class")], "Enforce")
    assert (ok, status, reason) == (True, "True", "Passed") and "warnings: storage for Galera: no class" in message


def test_a_verdict_holds_for_its_generation_or_once_trials_run():
    cond = [{"type": "Preflight", "status": "True", "observedGeneration": 3}]
    assert preflight.passed_before(cond, 3, started=False)
    assert not preflight.passed_before(cond, 4, started=False)  # a new spec before any trial ran: checked again
    assert preflight.passed_before(cond, 4, started=True)
    assert not preflight.passed_before([{**cond[0], "status": "False"}], 3, started=True)
    assert not preflight.passed_before([], 3, started=False)


def test_a_held_benchmark_is_checked_again_after_a_minute():
    assert preflight.due({}, T0)
    assert not preflight.due({"checkedTime": iso(T0)}, T0 + timedelta(seconds=preflight.RECHECK_S - 1))
    assert preflight.due({"checkedTime": iso(T0)}, T0 + timedelta(seconds=preflight.RECHECK_S))


def _pod(node: str, phase: str, message: str = "") -> dict:
    term = {"state": {"terminated": {"exitCode": 0 if phase == "Succeeded" else 2, "message": message}}}
    return {"spec": {"nodeName": node}, "status": {"phase": phase, "containerStatuses": [term]}}


def test_the_probe_waits_for_every_pod_then_names_what_tc_said():
    jobs = [preflight.probe_job(BENCH, n, i, "ns", "img", "abc", []) for i, n in enumerate(("n1", "n2", "n3"))]
    pods = [_pod("n1", "Succeeded", "qdisc netem 8001: root"), _pod("n2", "Failed", "Error: Specified qdisc kind is unknown."),
            _pod("n3", "Running")]
    assert preflight.probe_results(jobs, pods, timed_out=False) is None
    got = preflight.probe_results(jobs, pods, timed_out=True)
    assert got["n1"] == (True, "exit 0: qdisc netem 8001: root")
    assert got["n2"] == (False, "exit 2: Error: Specified qdisc kind is unknown.")
    assert got["n3"][0] is None and "did not finish" in got["n3"][1]


def test_the_probe_pod_is_root_with_net_admin_on_its_node_labelled_as_the_benchmarks():
    job = preflight.probe_job(BENCH, "n7", 4, "b-x-preflight", "reg/wanwide:1", "abc", ["pull"])
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeName"] == "n7" and pod["securityContext"]["runAsUser"] == 0
    c = pod["containers"][0]
    assert c["image"] == "reg/wanwide:1" and c["securityContext"]["capabilities"]["add"] == ["NET_ADMIN"]
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError" and "netem" in c["command"][-1]
    assert pod["imagePullSecrets"] == [{"name": "pull"}]
    assert job["metadata"]["labels"]["wanwide.io/benchmark"] == "b" and job["metadata"]["labels"]["wanwide.io/role"] == "preflight"
    assert job["spec"]["activeDeadlineSeconds"] == preflight.PROBE_TIMEOUT_S
    ns, rb = preflight.namespace_objects(BENCH, "b-x-preflight", {"kind": "ServiceAccount", "name": "w", "namespace": "s"},
                                         "wanwide-trial")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert rb["roleRef"]["name"] == "wanwide-trial"


def test_held_trials_do_not_start():
    pending = [{"metadata": {"name": f"b-t00{i}", "namespace": "lab"}, "spec": {"index": i}, "status": {}}
               for i in range(2)]
    bench = {**BENCH, "spec": {"matrix": {"parallelism": 2}}}
    started, patch = bm.schedule(None, bench, T0, start=False, ts=pending)  # no API call: nothing to start
    assert started == [] and patch["phase"] == "Pending" and patch["progress"] == "0/2"


def test_failing_past_the_timeout_fails_the_benchmark_once_and_a_new_spec_starts_afresh():
    pre = {"generation": 3, "since": iso(T0)}
    assert not preflight.gave_up(pre, 600, T0 + timedelta(seconds=599))
    assert preflight.gave_up(pre, 600, T0 + timedelta(seconds=600))
    assert preflight.current({"preflight": {**pre, "gaveUp": True}}, 3)["gaveUp"]
    assert preflight.current({"preflight": {**pre, "gaveUp": True}}, 4) == {"generation": 4}
    pending = [{"metadata": {"name": "b-t000", "namespace": "lab"}, "spec": {"index": 0}, "status": {}}]
    started, patch = bm.schedule(None, BENCH, T0, start=False, ts=pending, failed="nodes for the placement: none")
    assert started == [] and patch["phase"] == "Failed" and patch["completionTime"] == iso(T0)
    failed = {c["type"]: c for c in patch["conditions"]}["Failed"]
    assert (failed["status"], failed["reason"], failed["message"]) == ("True", "PreflightFailed",
                                                                       "nodes for the placement: none")
    fixed = {**BENCH, "status": {"phase": "Failed", "completionTime": iso(T0)}}
    _, patch = bm.schedule(None, fixed, T0, start=False, ts=pending)  # checked afresh: pending again
    assert patch["phase"] == "Pending" and patch["completionTime"] is None
