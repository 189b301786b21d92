"""The operator chart lints, renders least-privilege RBAC and a hardened Deployment."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.cluster
CHART = Path(__file__).resolve().parents[2] / "charts" / "wanwide"


def test_helm_lint(testcluster):
    out = testcluster.helm("lint", str(CHART), "--strict")
    assert "0 chart(s) failed" in out.stdout


def test_renders_hardened_operator(testcluster):
    out = testcluster.helm("template", "wanwide", str(CHART), "-n", "wanwide-system",
                           "--set", "watchNamespaces={bench-a,bench-b}").stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = [d["kind"] for d in docs]
    dep = next(d for d in docs if d["kind"] == "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert any(p["name"] == "metrics" for p in c["ports"])
    assert "--namespaces=bench-a,bench-b" in c["args"]
    # Secrets only in the watched namespaces, never cluster-wide
    roles = [d for d in docs if d["kind"] == "Role"]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["bench-a", "bench-b"]
    cluster = next(d for d in docs if d["kind"] == "ClusterRole" and not d["metadata"]["name"].endswith("-trial"))
    for rule in cluster["rules"]:
        assert "secrets" not in rule.get("resources", []), rule
        assert "networkchaos" not in rule.get("resources", []) or set(rule["verbs"]) <= {"get", "list", "watch"}
    bind = next(r for r in cluster["rules"] if "clusterroles" in r.get("resources", []))
    assert bind["verbs"] == ["bind"] and bind["resourceNames"] == ["wanwide-trial"]
    assert kinds.count("ClusterRoleBinding") == 1


def _template(tc, *args: str) -> list[dict]:
    out = tc.helm("template", "wanwide", str(CHART), "-n", "wanwide-system", *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_knobs_users_expect_reach_the_operator_pod(testcluster):
    docs = _template(testcluster, "--set", "imagePullSecrets[0].name=regcred", "--set", "nodeSelector.pool=ops",
                     "--set-json", 'tolerations=[{"key":"ops","operator":"Exists"}]',
                     "--set-json", 'affinity={"nodeAffinity":{}}', "--set", "priorityClassName=high",
                     "--set", "extraArgs[0]=--verbose", "--set-json", 'extraEnv=[{"name":"HTTPS_PROXY","value":"p"}]',
                     "--set", "image.repository=reg.example/ww", "--set", "image.tag=dev",
                     "--set", "podAnnotations.a=b", "--set", "commonLabels.team=perf")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}] and pod["nodeSelector"] == {"pool": "ops"}
    assert pod["tolerations"][0]["key"] == "ops" and "nodeAffinity" in pod["affinity"]
    assert pod["priorityClassName"] == "high" and dep["spec"]["template"]["metadata"]["annotations"] == {"a": "b"}
    assert "--verbose" in c["args"] and {"name": "HTTPS_PROXY", "value": "p"} in c["env"]
    # one value: the operator's image is the default image of every Benchmark's Rally Jobs
    assert c["image"] == "reg.example/ww:dev" and "--runner-image=reg.example/ww:dev" in c["args"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert all(d["metadata"]["labels"]["team"] == "perf" for d in docs)


def test_names_follow_helms_convention(testcluster):
    names = {d["metadata"]["name"] for d in _template(testcluster) if d["kind"] == "Deployment"}
    assert names == {"wanwide"}  # not wanwide-wanwide
    out = testcluster.helm("template", "bench", str(CHART), "--set", "fullnameOverride=ww").stdout
    assert {d["metadata"]["name"] for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"} == {"ww"}
    out = testcluster.helm("template", "bench", str(CHART)).stdout
    assert "name: bench-wanwide\n" in out and "--trial-clusterrole=bench-wanwide-trial" in out


def test_values_schema_refuses_mistakes_with_the_key(testcluster):
    for args, key in ((["--set", "imag.tag=1"], "imag"), (["--set", "operator.logFormat=xml"], "/operator/logFormat"),
                      (["--set", "extraArgs[0]=verbose"], "/extraArgs/0"),
                      (["--set", "watchNamespaces[0]=Bad_NS"], "/watchNamespaces/0")):
        r = testcluster.helm("template", "x", str(CHART), *args, check=False)
        assert r.returncode != 0 and key in r.stderr, (args, r.stderr)


def test_admission_policies_scope_trials_to_the_watched_namespaces_and_the_operator_to_its_own(testcluster):
    """docs/security.md 10 and 12: the Trials policy binds where this release's operator watches (another release
    makes the Trials of its own namespaces), everywhere when cluster-wide; the scope policy matches this
    release's ServiceAccount only; both off with admission.enabled=false; the probe runs the operator's image."""
    docs = _template(testcluster, "--set", "watchNamespaces={bench-a,bench-b}", "--set", "image.digest=sha256:" + "a" * 64)
    binding = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"
                   and d["metadata"]["name"] == "wanwide-trials")
    expr = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]
    assert (expr["key"], expr["operator"], expr["values"]) == ("kubernetes.io/metadata.name", "In", ["bench-a", "bench-b"])
    scope = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy" and d["metadata"]["name"] == "wanwide-scope")
    assert "system:serviceaccount:wanwide-system:wanwide" in scope["spec"]["matchConditions"][0]["expression"]
    args = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--probe-image=ghcr.io/wanwide/wanwide@sha256:{'a' * 64}" in args
    allowed = next(a for a in args if a.startswith("--allowed-charts="))
    charts = allowed.removeprefix("--allowed-charts=").split(",")
    assert charts == [f"https://tarballs.opendev.org/openstack/openstack-helm/{c}"
                      for c in ("keystone", "rabbitmq", "placement", "glance", "nova", "neutron")]
    wide = _template(testcluster, "--set", "clusterWide=true")
    b = next(d for d in wide if d["kind"] == "ValidatingAdmissionPolicyBinding" and d["metadata"]["name"].endswith("-trials"))
    assert "matchResources" not in b["spec"]
    assert not [d for d in _template(testcluster, "--set", "admission.enabled=false")
                if d["kind"].startswith("ValidatingAdmissionPolicy")]
