"""The Argo CD health checks judge Benchmarks, Trials and Topologies as a user would.

They run as Argo CD runs them: gopher-lua (Lua 5.1, no string library) through
hack/luacheck, which first has to pass every health test Argo CD ships for its own
scripts. Needs go and the Go module proxy, as tests/plan/test_upstream_schemas.py does.
"""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.argocd import CM_PATCH, ROOT, argocd, health, healths, run
from tests.plan.test_upstream_schemas import _strict
from wanwide.core import timestamps
from wanwide.providers.kubernetes.controller import trialstate

T0 = timestamps.parse("2026-01-01T00:00:00Z")


class _NoTimestamps(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML as Kubernetes reads it: a timestamp stays a string."""


_NoTimestamps.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _requires(go_mod: str) -> dict[str, str]:
    return dict(re.findall(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)", go_mod, re.M))


def test_luacheck_uses_the_gopher_lua_argo_cd_pins():
    ours = _requires((ROOT / "hack" / "luacheck" / "go.mod").read_text())
    theirs = _requires((Path(argocd("module")) / "go.mod").read_text())
    for mod in ("github.com/yuin/gopher-lua", "layeh.com/gopher-json"):
        assert ours[mod] == theirs[mod], (mod, ours[mod], theirs[mod])


def test_luacheck_passes_argo_cds_own_health_tests():
    """Every case of resource_customizations/*/*/health_test.yaml, judged as Argo CD's
    util/lua/health_test.go does (the object's own script first, all libraries open)."""
    rc = Path(argocd("module")) / "resource_customizations"
    jobs, expected = [], []
    for test_file in sorted(rc.glob("*/*/health_test.yaml")):
        d = test_file.parent
        for case in yaml.load(test_file.read_text(), Loader=_NoTimestamps)["tests"]:
            path = next(v for k, v in case.items() if k.lower() == "inputpath")
            obj = next(yaml.load_all((d / path).read_text(), Loader=_NoTimestamps))
            group = obj["apiVersion"].rpartition("/")[0]
            own = rc / group / obj["kind"] / "health.lua"
            jobs.append({"script": (own if own.exists() else d / "health.lua").read_text(), "object": obj,
                         "openLibs": True})
            want = case["healthStatus"]
            expected.append((f"{d.relative_to(rc)}/{path}", want["status"], want.get("message", "")))
    assert len(jobs) > 500
    wrong = [(name, status, message, r) for (name, status, message), r in zip(expected, run(jobs), strict=True)
             if "error" in r or (r["health"]["status"], r["health"].get("message", "")) != (status, message)]
    assert wrong == [], wrong[:5]


def test_luacheck_runs_scripts_as_argo_cd_does():
    obj = {"kind": "X", "metadata": {"name": "x"}, "status": {"n": 3, "ratio": 0.5}}
    upper = 'return {status = "Healthy", message = string.upper("ok")}'
    got = run([{"script": s, "object": obj, "openLibs": libs} for s, libs in [
        ('return {status = "Healthy", message = obj.status.n .. "/" .. obj.status.ratio}', False),
        ('return {status = "Fine"}', False),
        ("return {}", False),
        ("return nil", False),
        (upper, True),
        (upper, False),
    ]])
    assert got[:5] == [{"health": {"status": "Healthy", "message": "3/0.5"}},
                       {"health": {"status": "Unknown", "message": "Lua returned an invalid health status"}},
                       {"health": {"status": ""}},
                       {"health": None},
                       {"health": {"status": "Healthy", "message": "OK"}}]
    assert "with key 'upper'" in got[5]["error"]  # no string library for argocd-cm scripts


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
