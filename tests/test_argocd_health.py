"""The Argo CD health checks judge Benchmarks, Trials and Topologies as a user would.

They run through Argo CD's own health test command (``argocd admin settings resource-overrides
health``, the CLI built by hack/argocd.sh from the Go module proxy). Needs go and the proxy, as
tests/plan/test_upstream_schemas.py does.
"""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.argocd import CM_PATCH, ROOT, argocd, health, healths
from tests.plan.test_upstream_schemas import _strict
from wanwide.core import timestamps
from wanwide.providers.kubernetes.controller import trialstate

T0 = timestamps.parse("2026-01-01T00:00:00Z")


class _NoTimestamps(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML as Kubernetes reads it: a timestamp stays a string."""


_NoTimestamps.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def test_argo_cd_runs_the_scripts_without_the_string_library_and_only_with_the_patch():
    """What the scripts may use is what Argo CD opens for argocd-cm scripts; without the patch a wanwide
    object gets no health at all (the Application would look Healthy while its Benchmark fails)."""
    topo = {"kind": "Topology", "metadata": {"name": "t"}, "status": {"n": 3}}
    key = "resource.customizations.health.wanwide.io_Topology"
    ok = 'return {status = "Healthy", message = "n=" .. obj.status.n}'
    assert healths([topo], data={key: ok}) == [("Healthy", "n=3")]
    with pytest.raises(AssertionError, match="upper"):
        healths([topo], data={key: 'return {status = "Healthy", message = string.upper("x")}'})
    assert healths([topo], data={}) == [("", "no health script")]


def test_scripts_use_only_what_argo_cd_opens():
    data = yaml.safe_load(CM_PATCH.read_text())["data"]
    assert set(data) == {f"resource.customizations.health.wanwide.io_{k}" for k in ("Benchmark", "Trial", "Topology")}
    for key, text in data.items():
        code = re.sub(r'"[^"]*"|--[^\n]*', "", text)
        assert not re.search(r"\b(string|math|os|io|debug|coroutine)\.", code), key
        assert not re.search(r"\w:\w+\(", code), f"{key}: a method call on a string needs the string library"


# ---- Benchmark ----------------------------------------------------------------------------

def bench(phase: str | None = None, progress: str = "1/4", failed: int = 0, conditions=None, gen: int = 2,
          observed: int | None = 2, **status) -> dict:
    s = {"observedGeneration": observed, "progress": progress, "conditions": conditions or [],
         "trials": {"total": 4, "failed": failed}, **status}
    if phase:
        s["phase"] = phase
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark",
            "metadata": {"name": "b", "namespace": "n", "generation": gen}, "status": s}


def cond(ctype: str, status: str, message: str = "") -> dict:
    return {"type": ctype, "status": status, "reason": ctype, "message": message}


def operator_conditions(phase: str, message: str = "") -> list[dict]:
    """The conditions the operator writes for a phase (whatever its contract is today)."""
    return trialstate.outcome_conditions([cond("Valid", "True")], phase, phase, message, 2, T0)


def test_benchmark_before_the_operator_read_it():
    assert health({**bench(), "status": None}) == ("Progressing", "waiting for the operator")
    assert health(bench("Succeeded", observed=1, conditions=operator_conditions("Succeeded"))) == (
        "Progressing", "waiting for the operator to read generation 2")


def test_benchmark_running_succeeded_failed():
    running = bench("Running", "1/4", failed=1, conditions=operator_conditions("Running"))
    assert health(running) == ("Progressing", "phase Running, trials 1/4 (1 failed)")
    done = bench("Succeeded", "4/4", conditions=operator_conditions("Succeeded"), resultsURI="s3://r/b/")
    assert health(done) == ("Healthy", "phase Succeeded, trials 4/4, results in s3://r/b/")
    failed = bench("Failed", "4/4", failed=2, conditions=operator_conditions("Failed"))
    assert health(failed) == ("Degraded", "phase Failed, trials 4/4 (2 failed)")


@pytest.mark.parametrize("final", ["Complete", "Succeeded"])  # the conditions contract, and the one before
def test_benchmark_conditions_decide_over_a_stale_phase(final):
    ok = [cond(final, "True"), cond("Failed", "False"), cond("Progressing", "False")]
    assert health(bench("Running", "4/4", conditions=ok))[0] == "Healthy"
    ko = [cond(final, "False"), cond("Failed", "True"), cond("Progressing", "False")]
    assert health(bench("Running", "4/4", conditions=ko))[0] == "Degraded"


def test_benchmark_invalid():
    invalid = bench("Invalid", "0/0", conditions=[cond("Valid", "False", "Topology 'nope' not found"),
                                                   cond("Failed", "True")])
    assert health(invalid) == ("Degraded", "invalid spec: Topology 'nope' not found")
    assert health(bench("Invalid", "0/0"))[0] == "Degraded"  # the phase alone says so too
    # an edit that does not plan: the running trials go on, Argo CD shows the spec is wrong
    edited = bench("Running", "1/4", conditions=[cond("Valid", "False", "spec.matrix: bad"), cond("Progressing", "True")])
    assert health(edited) == ("Degraded", "invalid spec: spec.matrix: bad")


def test_benchmark_held_by_its_preflight_then_failed_by_it():
    held = bench("Pending", "0/1", conditions=[cond("Preflight", "False", "1 of 5 check(s) failed: netem …"),
                                               cond("Progressing", "False")])
    assert health(held) == ("Degraded", "held by its preflight: 1 of 5 check(s) failed: netem …")
    checking = bench("Pending", "0/1", conditions=[cond("Preflight", "Unknown", "netem probe on 3 node(s)")])
    assert health(checking)[0] == "Progressing"
    gave_up = bench("Failed", "0/1", conditions=[cond("Preflight", "False", "gave up …"), *operator_conditions("Failed")])
    assert health(gave_up) == ("Degraded", "phase Failed, trials 0/1")


def test_benchmark_succeeded_but_an_edit_only_reached_pending_trials():
    applied = cond("SpecApplied", "True", "generation 2 applies to trials not yet started; 4 started trial(s) keep their plan")
    assert health(bench("Succeeded", "4/4", conditions=[*operator_conditions("Succeeded"), applied])) == (
        "Healthy", f"phase Succeeded, trials 4/4; {applied['message']}")


# ---- Trial, Topology ----------------------------------------------------------------------

def trial(**status) -> dict:
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": "Trial", "metadata": {"name": "b-t000", "generation": 1},
            "status": status or None}


def test_trial():
    assert health(trial()) == ("Progressing", "Pending: waiting for its Benchmark to start it")
    assert health(trial(phase="Loading", message="Rally running in 3 region(s)")) == (
        "Progressing", "Loading: Rally running in 3 region(s)")
    assert health(trial(phase="CleaningUp", outcome="Failed", outcomeMessage="Loading took longer than its timeout")) == (
        "Progressing", "CleaningUp after a failure (Loading took longer than its timeout)")
    failed = trial(phase="Failed", reason="LoadingTimeout", message="Loading took longer than its timeout",
                   conditions=operator_conditions("Failed", "Loading took longer than its timeout"))
    assert health(failed) == ("Degraded", "LoadingTimeout: Loading took longer than its timeout")
    ok = trial(phase="Succeeded", reason="Completed", message="chaos removed; results stored", resultsURI="s3://r/t/",
               conditions=operator_conditions("Succeeded"))
    assert health(ok) == ("Healthy", "Completed: chaos removed; results stored, results in s3://r/t/")


def test_topology():
    def topo(conds, observed=1):
        return {"kind": "Topology", "metadata": {"name": "t", "generation": 1},
                "status": {"observedGeneration": observed, "matrix": "RTT 100ms", "conditions": conds}}
    assert healths([topo([cond("Valid", "True")]), topo([cond("Valid", "False", "regions: none")]),
                    topo([cond("Valid", "True")], observed=None)]) == [
        ("Healthy", "RTT 100ms"), ("Degraded", "regions: none"), ("Progressing", "not validated yet")]


# ---- the Application example --------------------------------------------------------------

@pytest.fixture(scope="module")
def application_schema() -> dict:
    crd = yaml.load((Path(argocd("module")) / "manifests" / "crds" / "application-crd.yaml").read_text(),
                    Loader=_NoTimestamps)
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return _strict(v["schema"]["openAPIV3Schema"])


def test_application_example_is_valid_for_argo_cd(application_schema):
    apps = list(yaml.safe_load_all((ROOT / "manifests" / "argocd" / "application.yaml").read_text()))
    assert [a["metadata"]["name"] for a in apps] == ["wanwide-crds", "wanwide", "wanwide-benchmarks"]
    for app in apps:
        jsonschema.Draft4Validator(application_schema).validate(app)
    bad = {**apps[0], "spec": {**apps[0]["spec"], "syncPolicy": {"automated": {"prune": True, "selfheal": True}}}}
    with pytest.raises(jsonschema.ValidationError):  # the check can fail: a misspelt field
        jsonschema.Draft4Validator(application_schema).validate(bad)


def test_docs_examples_are_wanwide_objects_the_models_accept():
    from wanwide.core.plan.load import load_documents

    text = (ROOT / "docs" / "argocd.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "wanwide.io/v1alpha1" in b]
    assert blocks
    for b in blocks:
        docs = load_documents([b])
        assert docs.benchmarks, b
        for d in yaml.safe_load_all(b):
            assert "argocd.argoproj.io/sync-wave" in d["metadata"].get("annotations", {}), d["metadata"]["name"]
