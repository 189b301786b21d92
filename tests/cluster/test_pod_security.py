"""The Rally runner's pods and the operator's pod pass the Pod Security Standard "restricted".

The API server's own Pod Security admission decides: a namespace enforcing ``restricted``
takes server-side dry-run creates of a Pod made from the rendered runner Job's template and
from the chart's Deployment template, and refuses them once hardening is taken away.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.operator_env import SA
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render import render_trial
from wanwide.providers.kubernetes.render.rally import JOB

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
REFUSED = 'violates PodSecurity "restricted:latest"'


@pytest.fixture(scope="module")
def restricted(testcluster) -> str:
    tc = testcluster
    ns = tc.namespace("psa")
    tc.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted",
               "pod-security.kubernetes.io/enforce-version=latest")
    tc.kubectl("create", "serviceaccount", SA, "-n", ns)
    deadline = time.time() + 60  # the ServiceAccount admission waits for "default" too
    while tc.kubectl("get", "serviceaccount", "default", "-n", ns, check=False).returncode != 0:
        assert time.time() < deadline, "no default ServiceAccount"
        time.sleep(0.5)
    yield ns
    tc.kubectl("delete", "namespace", ns, "--wait=false")


def pod(template: dict[str, Any], name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": template["metadata"].get("labels", {})},
            "spec": copy.deepcopy(template["spec"])}


def dry_run(tc, obj: dict[str, Any]):
    return tc.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", input=yaml.safe_dump(obj), check=False)


def runner_template() -> dict[str, Any]:
    docs = load_documents([(REPO / "manifests" / "examples" / "uniform-9.yaml").read_text()])
    (p,) = plan(docs.benchmarks[0], docs.topology_for(docs.benchmarks[0]))
    jobs = [o for o in render_trial(p).load if o["kind"] == "Job" and o["metadata"]["name"] == JOB]
    assert jobs, "no runner Job rendered"
    return jobs[0]["spec"]["template"]


def operator_template(tc) -> dict[str, Any]:
    out = tc.helm("template", "wanwide", str(REPO / "charts" / "wanwide"), "-n", "wanwide-system").stdout
    dep = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment")
    return dep["spec"]["template"]


def test_runner_pod_is_admitted_as_restricted(testcluster, restricted):
    runner = pod(runner_template(), "rally-runner", restricted)
    ok = dry_run(testcluster, runner)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "pod/rally-runner"

    no_seccomp = copy.deepcopy(runner)
    del no_seccomp["spec"]["securityContext"]["seccompProfile"]
    refused = dry_run(testcluster, no_seccomp)
    assert refused.returncode != 0
    assert REFUSED in refused.stderr and "seccompProfile" in refused.stderr, refused.stderr


def test_operator_pod_is_admitted_as_restricted(testcluster, restricted):
    op = pod(operator_template(testcluster), "wanwide-operator", restricted)
    ok = dry_run(testcluster, op)
    assert ok.returncode == 0, ok.stderr

    caps_kept = copy.deepcopy(op)
    del caps_kept["spec"]["containers"][0]["securityContext"]["capabilities"]
    refused = dry_run(testcluster, caps_kept)
    assert refused.returncode != 0
    assert REFUSED in refused.stderr and "unrestricted capabilities" in refused.stderr, refused.stderr
