"""Every Secret, ConfigMap and ServiceAccount a pod of wanwide's own Jobs (Rally, network probes) refers to
is rendered in the pod's namespace: a reference to a missing one leaves the pod unstarted on a real cluster
(CreateContainerConfigError), which kwok and the fakes would never show."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.plan.specs import benchmark
from wanwide.core.contracts import s3_target
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render import render_trial


def _variants() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for backend in ("mariadb", "galera"):
        for topology in ("uniform", "hierarchical", "explicit"):
            for load in ("light", "high"):
                doc = benchmark(backend, topology)
                doc["spec"]["workload"]["load"] = load
                out.append((f"{backend}-{topology}-{load}", doc))
    return out


def references(pod: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of what the pod needs to exist to start."""
    refs: set[tuple[str, str]] = set()
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref and not ref.get("optional"):
                refs.add(("Secret", ref["name"]))
        for src in c.get("envFrom") or []:
            for kind, key in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                if src.get(key) and not src[key].get("optional"):
                    refs.add((kind, src[key]["name"]))
    for v in pod.get("volumes") or []:
        if "secret" in v and not v["secret"].get("optional"):
            refs.add(("Secret", v["secret"]["secretName"]))
        if "configMap" in v and not v["configMap"].get("optional"):
            refs.add(("ConfigMap", v["configMap"]["name"]))
    if pod.get("serviceAccountName"):
        refs.add(("ServiceAccount", pod["serviceAccountName"]))
    for s in pod.get("imagePullSecrets") or []:
        refs.add(("Secret", s["name"]))
    return refs


@pytest.mark.parametrize(("case", "doc"), _variants(), ids=[c for c, _ in _variants()])
def test_what_the_runner_and_probe_pods_refer_to_is_rendered_in_their_namespace(case, doc):
    d = load_documents([yaml.safe_dump(doc)])
    b = d.benchmarks[0]
    p = plan(b, d.topology_for(b))[0]
    r = render_trial(p)
    jobs = [o for o in r.load + r.probes(1, s3_target(p.spec.results.s3)) if o["kind"] == "Job"]
    if case.endswith("light"):
        assert {j["metadata"]["namespace"] for j in jobs} > {p.namespace(x) for x in p.load_regions}, \
            "regions without load probe too"
    rendered = {(o["metadata"].get("namespace"), o["kind"], o["metadata"]["name"])
                for o in r.objects + r.load + r.probes(1, s3_target(p.spec.results.s3))}
    missing = sorted({(j["metadata"]["namespace"], j["metadata"]["name"], kind, name)
                      for j in jobs for kind, name in references(j["spec"]["template"]["spec"])
                      if (j["metadata"]["namespace"], kind, name) not in rendered})
    assert not missing, f"pods refer to objects not rendered in their namespace: {missing}"
