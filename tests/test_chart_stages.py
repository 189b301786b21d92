"""A rendered chart as stages (providers/kubernetes/render/chart.py), on the fixture keystone chart's real ``helm template`` output.

Regenerate the stage listing on purpose with ``UPDATE_GOLDEN=1 pytest tests/test_chart_stages.py``.
"""

from __future__ import annotations

import os

import pytest

from tests.chartdata import RENDERED, fixture_plan, release
from wanwide.providers.kubernetes.render.chart import (
    ChartError,
    ChartRefused,
    documents,
    next_step,
    stages,
)

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "keystone-fixture-stages.txt")
P = fixture_plan()
REL = release(P)
LABELS = P.labels(REL.region, "keystone")
NS = REL.namespace
DB_NS = P.db_namespace
CHART = stages(documents(RENDERED.read_text()), REL.name, REL.namespace, LABELS, (DB_NS,))


def _listing(chart) -> str:
    return "".join(f"{s.name}:\n" + "".join(f"  {o['kind']} {o['metadata'].get('namespace', '-')}/{o['metadata']['name']}\n"
                                            for o in s.objects) for s in chart.stages)


def test_the_fixture_chart_becomes_main_then_its_post_install_hooks_by_weight():
    text = _listing(CHART)
    if os.environ.get("UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(text)
    with open(GOLDEN) as f:
        assert text == f.read(), f"stages changed: review, then UPDATE_GOLDEN=1 to accept ({GOLDEN})"
    assert [s.name for s in CHART.stages] == ["main", "post-install -4", "post-install 0", "post-install 5"]
    assert [s.jobs for s in CHART.stages] == [(), (f"{NS}/keystone-db-sync",), (f"{NS}/keystone-domain-manage",),
                                              (f"{NS}/keystone-bootstrap",)]
    main = CHART.stages[0].objects
    kinds = [o["kind"] for o in main]
    assert kinds.index("ServiceAccount") < kinds.index("Secret") < kinds.index("Role") < kinds.index("Deployment")
    assert "Job" not in kinds  # hooks are not part of the main stage
    # the chart's dependency-check Roles in the database namespace keep it; the rest go to the release's
    assert {o["metadata"]["namespace"] for o in CHART.objects} == {NS, DB_NS}
    assert all(o["metadata"]["labels"].items() >= LABELS.items() for o in CHART.objects)
    assert CHART.skipped == ()


def _job(name: str, hook: str = "post-install", weight: str | None = None, ns: str | None = None) -> dict:
    ann = {"helm.sh/hook": hook} | ({"helm.sh/hook-weight": weight} if weight else {})
    meta = {"name": name, "annotations": ann} | ({"namespace": ns} if ns else {})
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}


def test_pre_install_hooks_go_first_tests_and_deletion_hooks_are_left_out_and_weights_group():
    docs = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keys", "annotations": {"helm.sh/hook": "pre-install"}}},
        _job("setup", "pre-install", "-1"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
        _job("b", "post-install,post-upgrade", "2"), _job("a", "post-install", "2"), _job("sync", "post-install", "-3"),
        _job("cleanup", "pre-delete"), _job("upgrade-only", "post-upgrade"), _job("odd", "post-install,sometime"),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "annotations": {"helm.sh/hook": "test-success"}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}},
    ]
    c = stages(docs, "rel", "ns1", {"wanwide.io/trial": "t"})
    assert [(s.name, [o["metadata"]["name"] for o in s.objects]) for s in c.stages] == [
        ("pre-install -1", ["setup"]), ("pre-install 0", ["keys"]), ("main", ["sa", "cm"]),
        ("post-install -3", ["sync"]), ("post-install 2", ["a", "b"])]
    assert c.skipped == ("Job/cleanup (pre-delete)", "Job/upgrade-only (post-upgrade)", "Job/odd (post-install,sometime)",
                         "Pod/t (test-success)")  # a hook that is never installed is not applied, so not judged
    assert {o["metadata"]["namespace"] for o in c.objects} == {"ns1"}


def test_a_hook_pod_or_an_object_twice_is_refused_with_what_to_do():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"helm.sh/hook": "post-install"}}}
    with pytest.raises(ChartError, match="hook Pod.*values"):
        stages([pod], "rel", "ns1", {})
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}
    with pytest.raises(ChartError, match="more than once"):
        stages([cm, cm], "rel", "ns1", {})


def _state(stage_jobs: dict[int, str]) -> dict[str, str]:
    return {j: state for i, state in stage_jobs.items() for j in CHART.stages[i].jobs}


def test_next_step_applies_main_with_the_first_hooks_then_waits_stage_by_stage():
    first = next_step(CHART, {})
    assert first.apply == CHART.stages[0].objects + CHART.stages[1].objects and not first.done
    assert first.waiting == "post-install -4"
    assert next_step(CHART, _state({1: "running"})).apply == ()
    after_sync = next_step(CHART, _state({1: "complete"}))
    assert after_sync.apply == CHART.stages[2].objects and after_sync.waiting == "post-install 0"
    # a later stage's Job means every earlier stage is done, whatever became of its Jobs
    assert next_step(CHART, _state({3: "running"})).apply == ()
    assert next_step(CHART, _state({1: "complete", 2: "complete", 3: "complete"})).done
    assert next_step(CHART, _state({3: "complete"})).done


def test_a_kill_between_two_applies_of_a_stage_applies_that_stage_again_and_a_failed_hook_is_said():
    two = stages([_job("x", weight="1"), _job("y", weight="1")], "rel", "ns1", {})
    half = next_step(two, {"ns1/x": "running"})
    assert [o["metadata"]["name"] for o in half.apply] == ["x", "y"] and not half.done
    failed = next_step(two, {"ns1/x": "failed", "ns1/y": "complete"})
    assert failed.failed == ("ns1/x",) and failed.apply == ()


def test_a_chart_without_hooks_is_done_once_applied():
    c = stages([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}], "rel", "ns1", {})
    n = next_step(c, {})
    assert n.done and [o["metadata"]["name"] for o in n.apply] == ["cm"]


# ---- what a chart may render (issue 43: a Benchmark author names the chart; the operator applies it) -------

def _o(kind: str, name: str, api: str = "v1", ns: str | None = None, **body) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {})}, **body}


RBAC = "rbac.authorization.k8s.io/v1"
ROLE = _o("Role", "dep", RBAC, rules=[{"apiGroups": ["", "batch"], "resources": ["services", "jobs"], "verbs": ["get", "list"]}])


@pytest.mark.parametrize("docs, said", [
    ([_o("ClusterRoleBinding", "own-it", RBAC, roleRef={"kind": "ClusterRole", "name": "cluster-admin"})],
     "ClusterRoleBinding own-it (rbac.authorization.k8s.io/v1) is not a kind a chart may render"),
    ([_o("Namespace", "kube-public2")], "Namespace kube-public2 (v1) is not a kind"),
    ([_o("DaemonSet", "everywhere", "apps/v1")], "DaemonSet ns1/everywhere (apps/v1) is not a kind"),
    ([_o("Deployment", "fake", "example.com/v1")], "Deployment ns1/fake (example.com/v1) is not a kind"),
    ([_o("NetworkChaos", "cut", "chaos-mesh.org/v1alpha1")], "NetworkChaos ns1/cut"),
    ([_o("ConfigMap", "x", ns="kube-system")], "ConfigMap kube-system/x is outside the release's namespace ns1"),
    ([ROLE, _o("RoleBinding", "priv", RBAC, ns="kube-system", roleRef={"kind": "Role", "name": "dep"},
               subjects=[{"kind": "ServiceAccount", "name": "a", "namespace": "ns1"}])],
     "RoleBinding kube-system/priv is outside the release's namespace"),
    ([_o("RoleBinding", "admin", RBAC, roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                   "name": "admin"}, subjects=[{"kind": "ServiceAccount", "name": "a"}])],
     "binds ClusterRole admin: a chart may bind only a Role it renders"),
    ([ROLE, _o("RoleBinding", "b", RBAC, roleRef={"kind": "Role", "name": "dep"},
               subjects=[{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}])],
     "binds ServiceAccount kube-system/default: a chart may bind only ServiceAccounts of ns1"),
    ([ROLE, _o("RoleBinding", "b", RBAC, roleRef={"kind": "Role", "name": "dep"},
               subjects=[{"kind": "User", "name": "mallory"}])], "binds User ns1/mallory"),
    ([_o("Role", "wide", RBAC, rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])],
     "Role ns1/wide rules[0] grants ['*'] on ['*'] of ['*']"),
    ([_o("Role", "secrets", RBAC, rules=[{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])],
     "grants ['get'] on ['secrets']"),
    ([_o("Role", "esc", RBAC, rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}])],
     "grants ['create'] on ['pods']"),
    ([_o("Service", "db", spec={"type": "NodePort"})], "Service ns1/db is a NodePort Service"),
    ([_o("Service", "mitm", spec={"externalIPs": ["10.0.0.1"]})], "with externalIPs"),
    ([_o("Secret", "wanwide-credentials")], "names starting wanwide, rally, network-probe are the operator's own"),
    ([_o("Job", "rally", "batch/v1")], "Job ns1/rally: names starting"),
])
def test_a_chart_rendering_what_wanwide_does_not_apply_is_refused_whole_naming_the_object(docs, said):
    fine = _o("ConfigMap", "fine")
    with pytest.raises(ChartRefused) as e:
        stages([fine, *docs], "rel", "ns1", {"wanwide.io/trial": "t"}, ("db1",))
    assert said in str(e.value) and "nothing of it is applied" in str(e.value)
    assert "\n" not in str(e.value)
    assert isinstance(e.value, ChartError) and e.value.reason == "ChartRefused"


def test_what_the_keystone_chart_needs_passes_and_wanwide_labels_of_a_chart_are_taken_off():
    sa = _o("ServiceAccount", "ks")
    binding = _o("RoleBinding", "dep", RBAC, ns="db1", roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                                "name": "dep"},
                 subjects=[{"kind": "ServiceAccount", "name": "ks", "namespace": "ns1"}])
    role = {**ROLE, "metadata": {"name": "dep", "namespace": "db1"}}
    secret = _o("Secret", "db-user", metadata={"name": "db-user", "annotations": {
        "wanwide.io/copy-from": "kube-system/bootstrap-token", "wanwide.io/copy-keys": "*", "note": "kept"},
        "labels": {"wanwide.io/trial": "someone-else", "app": "ks"}})
    svc = _o("Service", "keystone-api", spec={"type": "ClusterIP", "ports": [{"port": 5000}]})
    c = stages([sa, role, binding, secret, svc], "rel", "ns1", {"wanwide.io/trial": "t"}, ("db1",))
    got = {o["metadata"]["name"]: o["metadata"] for o in c.objects}
    assert got["db-user"]["annotations"] == {"note": "kept"}
    assert got["db-user"]["labels"] == {"app": "ks", "wanwide.io/trial": "t"}
    assert got["dep"]["namespace"] == "db1"
    # the database's namespace is allowed for dependency-check RBAC only
    with pytest.raises(ChartRefused, match="ConfigMap db1/x is outside"):
        stages([_o("ConfigMap", "x", ns="db1")], "rel", "ns1", {}, ("db1",))


def test_yaml_aliases_in_a_rendered_chart_are_refused_before_they_expand():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nkind: ConfigMap\n"
    with pytest.raises(ChartRefused, match="YAML aliases"):
        documents(bomb)
    assert documents("kind: ConfigMap\nmetadata: {name: '*not-an-alias', labels: {a: '&b'}}\n")[0]["kind"] == "ConfigMap"
