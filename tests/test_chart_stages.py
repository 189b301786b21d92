"""A rendered chart as stages (providers/kubernetes/render/chart.py), on the fixture keystone chart's real ``helm template`` output.

Regenerate the stage listing on purpose with ``UPDATE_GOLDEN=1 pytest tests/test_chart_stages.py``.
"""

from __future__ import annotations

import os

import pytest

from tests.chartdata import RENDERED, fixture_plan, release
from wanwide.providers.kubernetes.render.chart import ChartError, documents, next_step, stages

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "keystone-fixture-stages.txt")
P = fixture_plan()
REL = release(P)
LABELS = P.labels(REL.region, "keystone")
CHART = stages(documents(RENDERED.read_text()), REL.name, REL.namespace, LABELS)
NS = REL.namespace
DB_NS = P.db_namespace


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
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    ]
    c = stages(docs, "rel", "ns1", {"wanwide.io/trial": "t"})
    assert [(s.name, [o["metadata"]["name"] for o in s.objects]) for s in c.stages] == [
        ("pre-install -1", ["setup"]), ("pre-install 0", ["keys"]), ("main", ["other", "cm"]),
        ("post-install -3", ["sync"]), ("post-install 2", ["a", "b"])]
    assert c.skipped == ("Job/cleanup (pre-delete)", "Job/upgrade-only (post-upgrade)", "Job/odd (post-install,sometime)",
                         "Pod/t (test-success)")
    assert "namespace" not in c.stages[2].objects[0]["metadata"]  # cluster-scoped
    assert c.stages[2].objects[1]["metadata"]["namespace"] == "ns1"


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
