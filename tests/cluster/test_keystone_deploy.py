"""Keystone as the operator deploys it: ``helm template`` per region, the objects applied in hook order.

Kills at every kind of point of Provisioning (after the base, during wave 0's hooks, while wave 1's
objects go ahead, during wave 1's hooks) must neither repeat a hook Job nor lose one; the chart comes
from a repository as readily as from a directory; the fixture's rendering kept as unit-test data is
what helm renders today.
"""

from __future__ import annotations

import dataclasses
import functools
import http.server
import json
import shutil
import subprocess
import threading
import time

import pytest
import yaml

from tests.chartdata import RENDERED, fixture_plan, release, render
from tests.cluster.operator_env import example, keystone_chart
from tests.cluster.test_operator import wait_phase
from wanwide.providers.kubernetes.kube import helm
from wanwide.providers.kubernetes.render.keystone import HelmRelease

pytestmark = pytest.mark.cluster
HOOKS = ("keystone-db-sync", "keystone-domain-manage", "keystone-bootstrap")


def test_the_fixture_rendering_kept_for_unit_tests_is_current(testcluster):
    assert render(str(testcluster.bin_dir / "helm")) == RENDERED.read_text(), \
        "the fixture chart renders differently: python -m tests.chartdata <helm> and review the stages golden file"


def _stages(chart) -> list[tuple[str, set[str]]]:
    return [(s.name, {f"{o['kind']}/{o['metadata'].get('namespace')}/{o['metadata']['name']}" for o in s.objects})
            for s in chart.stages]


def test_the_fixture_the_unit_tier_reads_stages_as_the_real_chart(testcluster, monkeypatch):
    """The unit tier has no helm and the project keeps no copy of upstream templates, so its chart tests read the
    fixture chart's rendering; here both are rendered with the operator's values for the same region: the same
    stages, the same hook Jobs, every object of the fixture in the real chart (the real one has more: its test
    Pod's ServiceAccount, Role and Secret, RabbitMQ Secrets; its test Pod is left out as a test hook)."""
    monkeypatch.setenv("WANWIDE_HELM", str(testcluster.bin_dir / "helm"))
    real_dir, _ = keystone_chart(testcluster)
    rel = release()
    labels = {"wanwide.io/test": "x"}
    also = (fixture_plan().db_namespace,)
    policy = helm.Policy((rel.chart, str(real_dir)))
    fixture = helm.Renders(workers=1, policy=policy).render(rel, labels, also)
    real = helm.Renders(workers=1, policy=policy).render(dataclasses.replace(rel, chart=str(real_dir)), labels, also)
    assert real_dir.name == "keystone" and (real_dir / "charts").is_dir()  # with its helm-toolkit
    assert [s.name for s in real.stages] == [s.name for s in fixture.stages]
    assert [s.jobs for s in real.stages] == [s.jobs for s in fixture.stages]
    for (name, want), (_, got) in zip(_stages(fixture), _stages(real), strict=True):
        assert want <= got, (name, sorted(want - got))
    assert real.skipped == ("Pod/keystone-test (test-success)",)


def test_a_chart_from_a_repository_is_pulled_once_and_rendered(testcluster, tmp_path, monkeypatch):
    h = str(testcluster.bin_dir / "helm")
    monkeypatch.setenv("WANWIDE_HELM", h)
    repo = tmp_path / "repo"
    repo.mkdir()
    chart_dir, _ = keystone_chart(testcluster)
    subprocess.run([h, "package", str(chart_dir), "-d", str(repo)], check=True, capture_output=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        subprocess.run([h, "repo", "index", str(repo), "--url", url], check=True, capture_output=True)
        version = yaml.safe_load((chart_dir / "Chart.yaml").read_text())["version"]
        renders = helm.Renders(workers=1, cache_dir=str(tmp_path / "cache"), policy=helm.Policy((f"{url}/keystone",)))
        local = release()
        rel = HelmRelease(local.name, local.namespace, local.region, url, "keystone", version, local.values, 1)
        chart = None
        for _ in range(200):
            chart = renders.get(rel, {"wanwide.io/test": "x"}, (fixture_plan().db_namespace,))
            if chart is not None:
                break
            time.sleep(0.1)
        assert chart is not None and [s.name for s in chart.stages][0] == "main"
        pulled = list((tmp_path / "cache").glob("*/*.tgz"))
        assert len(pulled) == 1
        server.shutdown()  # the archive pulled once is what renders from now on
        assert renders.chart_path(rel) == str(pulled[0])
    finally:
        server.server_close()
        shutil.rmtree(repo, ignore_errors=True)


def _hook_jobs(tc, trial: str) -> dict[tuple[str, str], str]:
    items = tc.kubectl_json("get", "jobs", "-A", "-l", f"wanwide.io/trial={trial},wanwide.io/role=keystone")["items"]
    return {(j["metadata"]["namespace"], j["metadata"]["name"]): j["metadata"]["uid"] for j in items}


def test_kills_anywhere_in_the_keystone_deployment_repeat_no_hook_and_lose_none(env):
    tc, ns, op = env["tc"], env["ns"], env["op"]
    name = "ks-kills"
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml")))
    for d in docs:
        d["metadata"]["name"] = name
    docs[0]["spec"]["generate"]["count"] = 6
    docs[1]["spec"]["topologyRef"] = name
    docs[1]["spec"]["timeouts"]["provisioning"] = "10m"
    tc.apply(yaml.safe_dump_all(docs), ns)
    trial = f"{name}-t000"
    points = {  # where to kill, from the trial's status and its hook Jobs
        "place applied": lambda st, jobs: "namespaces" in st.get("applied", []) and not jobs,
        "schema owner's hooks": lambda st, jobs: "keystone-schema" not in st.get("done", []) and bool(jobs),
        "the others ahead": lambda st, jobs: "keystone-schema" not in st.get("done", [])
        and (st.get("ahead") or {}).get("keystone", 0) > 0,
        "the others' hooks": lambda st, jobs: "keystone-schema" in st.get("done", [])
        and "keystone" not in st.get("done", []) and len({n for n, _ in jobs}) > 1,
    }
    uids: dict[tuple[str, str], set[str]] = {}
    killed: list[str] = []
    deadline = time.time() + 600
    while time.time() < deadline:
        t = tc.kubectl("get", "trial", trial, "-n", ns, "-o", "json", check=False)
        st = json.loads(t.stdout).get("status") or {} if t.returncode == 0 else {}
        jobs = _hook_jobs(tc, trial)
        for k, uid in jobs.items():
            uids.setdefault(k, set()).add(uid)
        if st.get("phase") not in (None, "Pending", "Provisioning"):
            break
        due = next((p for p, hit in points.items() if p not in killed and hit(st, jobs)), None)
        if due:
            op.kill()
            killed.append(due)
            time.sleep(0.5)
            op.start()
        time.sleep(0.3)
    assert len(killed) >= 3, f"killed only in {killed}"
    b = wait_phase(tc, ns, name, ("Succeeded", "Failed"), 420)
    assert b["status"]["phase"] == "Succeeded", (killed, b["status"])
    again = {k: v for k, v in uids.items() if len(v) > 1}
    assert again == {}, f"hook Jobs run again after kills in {killed}: {sorted(again)}"
    regions = {n for n, _ in uids}
    assert len(regions) == 6 and set(uids) == {(n, h) for n in regions for h in HOOKS}, sorted(uids)
    tc.kubectl("delete", "benchmark", name, "-n", ns, "--timeout=180s")
