"""How people install the operator: the chart in its three watch modes, and
``wanwide operator`` started as documented (no ``--namespaces``: every namespace).

The chart is installed for real (``helm install``) into the loopback cluster; what a
user checks afterwards is asked of the API server: the Deployment's arguments and
what the ServiceAccount may do (``kubectl auth can-i``).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster.operator_env import (
    Operator,
    example,
    install_crds,
    owned,
    results_store,
    sa_kubeconfig,
)

pytestmark = pytest.mark.cluster
CHART = Path(__file__).resolve().parents[2] / "charts" / "wanwide"


@pytest.fixture(scope="module")
def crds(testcluster):
    install_crds(testcluster)  # the shared cluster's CRDs: the releases below leave them alone (crds.enabled=false)
    return testcluster


def install(tc, release: str, ns: str, *sets: str, chart: Path = CHART) -> dict:
    args = ["upgrade", "--install", release, str(chart), "-n", ns, "--create-namespace"]
    # these releases share the cluster with the session's operator (release wanwide): a second release's
    # Trials policy would refuse that operator's Trials in the namespaces both watch (cluster-wide: all of
    # them) while it is installed. The policies themselves: tests/cluster/test_security.py, test_chart.py.
    for s in ("crds.enabled=false", "admission.enabled=false", *sets):
        args += ["--set", s]
    out = tc.helm(*args).stdout
    # the NOTES tell the user how to watch, wait for and fetch a run, with this install's names
    assert f"deployment/{release}-wanwide" in out and "--for=condition=Complete" in out, out
    assert "wanwide report s3://" in out
    dep = tc.kubectl_json("get", "deployment", f"{release}-wanwide", "-n", ns)
    return dep["spec"]["template"]["spec"]["containers"][0]


CRDS = ["topologies.wanwide.io", "benchmarks.wanwide.io", "trials.wanwide.io"]


def columns(tc, crd: str) -> list[str]:
    return [c["name"] for c in tc.kubectl_json("get", "crd", crd)["spec"]["versions"][0].get("additionalPrinterColumns", [])]


def adoption_commands(release: str, ns: str) -> list[list[str]]:
    """The chart README's one-time step for CRDs installed before they were templates, for this release."""
    text = (CHART / "README.md").read_text()
    block = text[text.index("let the release adopt them once"):].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [ln.strip() for ln in block.splitlines() if ln.strip().startswith("kubectl ")]
    assert len(lines) == 2, block
    out = []
    for crd in CRDS:
        for ln in lines:
            ln = ln.replace("$crd", crd).replace("release-name=wanwide", f"release-name={release}")
            out.append(ln.replace("release-namespace=wanwide-system", f"release-namespace={ns}").split()[1:])
    return out


def test_helm_upgrade_upgrades_the_crds_and_uninstall_keeps_them(crds, tmp_path):
    """The chart owns the CRDs (crds.enabled): CRDs from an older install are adopted as the chart's
    README says, a newer chart's CRD change arrives with ``helm upgrade``, and ``helm uninstall``
    leaves them and the objects of their kinds (crds.keep)."""
    tc = crds
    ns, release = tc.namespace("ww-crds"), "ww-crds"
    try:
        # CRDs that came from the old chart's crds/ folder (here: applied by the test cluster)
        r = tc.helm("install", release, str(CHART), "-n", ns, "--set", "crds.enabled=true", check=False)
        assert r.returncode != 0 and "invalid ownership metadata" in r.stderr, r.stderr
        tc.helm("uninstall", release, "-n", ns, check=False)
        for cmd in adoption_commands(release, ns):
            tc.kubectl(*cmd)
        install(tc, release, ns, "crds.enabled=true")
        crd = tc.kubectl_json("get", "crd", "benchmarks.wanwide.io")["metadata"]
        assert crd["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["labels"]["app.kubernetes.io/instance"] == release
        before = columns(tc, "benchmarks.wanwide.io")

        # the next version of the chart adds a column to the Benchmark CRD: helm upgrade applies it
        newer = tmp_path / "wanwide"
        shutil.copytree(CHART, newer)
        path = newer / "files" / "crds" / "benchmarks.wanwide.io.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["spec"]["versions"][0]["additionalPrinterColumns"].append(
            {"name": "Topology", "type": "string", "jsonPath": ".spec.topologyRef"})
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        install(tc, release, ns, "crds.enabled=true", chart=newer)
        assert columns(tc, "benchmarks.wanwide.io") == before + ["Topology"]
        install(tc, release, ns, "crds.enabled=true")  # and back: the other tests run this version
        assert columns(tc, "benchmarks.wanwide.io") == before

        # an object of their kinds, then uninstall: both stay
        topo = next(d for d in yaml.safe_load_all(example(tc, "uniform-9.yaml")) if d["kind"] == "Topology")
        tc.apply(yaml.safe_dump(topo), ns)
        out = tc.helm("uninstall", release, "-n", ns, "--wait")
        assert "kept due to the resource policy" in out.stdout + out.stderr, out.stdout + out.stderr
        for name in CRDS:
            tc.kubectl_json("get", "crd", name)
        assert tc.kubectl_json("get", "topology", topo["metadata"]["name"], "-n", ns)["metadata"]["name"]
    finally:
        tc.helm("uninstall", release, "-n", ns, check=False)
        for name in CRDS:  # as the test cluster had them: no release owns them
            tc.kubectl("label", "crd", name, "app.kubernetes.io/managed-by-", "app.kubernetes.io/instance-",
                       "app.kubernetes.io/name-", "app.kubernetes.io/version-", "app.kubernetes.io/part-of-",
                       "helm.sh/chart-", check=False)
            tc.kubectl("annotate", "crd", name, "meta.helm.sh/release-name-", "meta.helm.sh/release-namespace-",
                       "helm.sh/resource-policy-", check=False)
        install_crds(tc)
        tc.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def can(tc, sa: str, *args: str) -> bool:
    return tc.kubectl("auth", "can-i", *args, "--as", sa, check=False).stdout.strip() == "yes"


def uninstall(tc, release: str, ns: str) -> None:
    tc.helm("uninstall", release, "-n", ns, "--wait")
    tc.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def test_chart_default_watches_its_own_namespace(crds):
    tc = crds
    ns, other = tc.namespace("ww-own"), tc.namespace("ww-other")
    c = install(tc, "ww-own", ns)
    assert f"--namespaces={ns}" in c["args"]
    sa = f"system:serviceaccount:{ns}:ww-own-wanwide"
    assert can(tc, sa, "get", "secrets", "-n", ns)
    assert not can(tc, sa, "get", "secrets", "-n", other)
    assert not can(tc, sa, "get", "secrets", "-n", "kube-system")
    assert can(tc, sa, "create", "namespaces")
    uninstall(tc, "ww-own", ns)
    assert not can(tc, sa, "create", "namespaces")  # its ClusterRoleBinding went with it


def test_chart_with_watch_namespaces(crds):
    tc = crds
    ns, a, b = tc.namespace("ww-list"), tc.namespace("ww-a"), tc.namespace("ww-b")
    c = install(tc, "ww-list", ns, f"watchNamespaces={{{a},{b}}}")
    assert f"--namespaces={a},{b}" in c["args"]
    sa = f"system:serviceaccount:{ns}:ww-list-wanwide"
    assert can(tc, sa, "get", "secrets", "-n", a) and can(tc, sa, "get", "secrets", "-n", b)
    assert not can(tc, sa, "get", "secrets", "-n", ns)  # the release namespace is not watched
    assert not can(tc, sa, "get", "secrets", "-n", "default")
    uninstall(tc, "ww-list", ns)
    assert not can(tc, sa, "get", "secrets", "-n", a)


def test_chart_refuses_cluster_wide_with_a_namespace_list(crds):
    r = crds.helm("template", "x", str(CHART), "--set", "clusterWide=true", "--set", "watchNamespaces={a}",
                  check=False)
    assert r.returncode != 0
    assert "clusterWide=true watches every namespace: leave watchNamespaces empty" in r.stderr


def test_cluster_wide_operator_reconciles_any_namespace(crds, tmp_path):
    """The chart's clusterWide RBAC, and ``wanwide operator`` without --namespaces."""
    tc = crds
    sys_ns = tc.namespace("ww-all")
    c = install(tc, "ww-all", sys_ns, "clusterWide=true")
    op: Operator | None = None
    bad_ns = ""
    try:  # uninstalled whatever fails after the install: its ClusterRole would refuse the next install
        assert not any(a.startswith("--namespaces") for a in c["args"])
        sa = f"system:serviceaccount:{sys_ns}:ww-all-wanwide"
        anywhere = tc.namespace("anywhere")
        assert can(tc, sa, "get", "secrets", "-n", anywhere)
        assert not can(tc, sa, "delete", "secrets", "-n", anywhere)
        assert not can(tc, sa, "create", "networkchaos.chaos-mesh.org", "-n", anywhere)

        # two namespaces nobody listed: an invalid Benchmark in one, a valid one in the other
        bad_ns, good_ns = tc.namespace("cw-bad"), tc.namespace("cw-good")
        results_store(tc, good_ns)
        kubeconfig = sa_kubeconfig(tc, sys_ns, "ww-all-wanwide", tmp_path / "kubeconfig")
        op = Operator(tc, kubeconfig, [], tmp_path / "operator.log", release="ww-all", system_ns=sys_ns)
        op.start()
        docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml")))
        bench = next(d for d in docs if d["kind"] == "Benchmark")
        bad = yaml.safe_load(yaml.safe_dump(bench))
        bad["metadata"]["name"] = "no-topology"
        bad["spec"]["topologyRef"] = "nope"
        tc.apply(yaml.safe_dump(bad), bad_ns)
        tc.apply(yaml.safe_dump_all(docs), good_ns)
        name = bench["metadata"]["name"]

        deadline, b, trials = time.time() + 120, {}, []
        while time.time() < deadline:
            b = tc.kubectl_json("get", "benchmark", "no-topology", "-n", bad_ns)
            trials = tc.kubectl_json("get", "trials", "-n", good_ns, "-l", f"wanwide.io/benchmark={name}")["items"]
            if (b.get("status") or {}).get("phase") == "Invalid" and trials:
                break
            time.sleep(1)
        log = (tmp_path / "operator.log").read_text()
        assert "TypeError" not in log, log[-3000:]
        assert op.proc.poll() is None, f"operator exited:\n{log[-3000:]}"
        assert (b.get("status") or {}).get("phase") == "Invalid", (b.get("status"), log[-3000:])
        conds = {x["type"]: x for x in b["status"]["conditions"]}
        assert "Topology 'nope' not found" in conds["Valid"]["message"]
        assert trials, f"no Trial for {good_ns}/{name}:\n{log[-3000:]}"
        # the key Secret it made in a namespace it was never told about
        keys = tc.kubectl_json("get", "secrets", "-n", good_ns, "-l", f"wanwide.io/benchmark={name}")["items"]
        assert keys, "no key Secret in the Benchmark's namespace"

        # deleting it is handled too (the finalizer runs cluster-wide): nothing left behind
        tc.kubectl("delete", "benchmark", name, "-n", good_ns, "--wait=false")
        deadline = time.time() + 240
        while time.time() < deadline:
            left = tc.kubectl("get", "benchmark", name, "-n", good_ns, check=False)
            if left.returncode != 0 and "NotFound" in left.stderr:
                break
            time.sleep(2)
        else:
            raise AssertionError(f"{name} still there after 240 s:\n{(tmp_path / 'operator.log').read_text()[-3000:]}")
        assert owned(tc, "networkchaos", good_ns, name) == []
        assert all(n["metadata"].get("deletionTimestamp") for n in owned(tc, "namespaces", good_ns, name))
    finally:
        if op is not None:
            op.stop()
        if bad_ns:
            tc.kubectl("delete", "benchmark", "--all", "-n", bad_ns, "--wait=false", check=False)
        uninstall(tc, "ww-all", sys_ns)
