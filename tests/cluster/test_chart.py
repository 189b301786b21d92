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
    assert bind["verbs"] == ["bind"] and bind["resourceNames"] == ["wanwide-wanwide-trial"]
    assert kinds.count("ClusterRoleBinding") == 1
