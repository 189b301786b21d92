"""The Argo CD health checks (Lua) judge Benchmarks, Trials and Topologies as a user would."""

from __future__ import annotations

from pathlib import Path

import lupa
import yaml

CM = yaml.safe_load((Path(__file__).resolve().parents[1] / "manifests" / "argocd" / "argocd-cm-patch.yaml").read_text())


def health(kind: str, obj: dict) -> tuple[str, str]:
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)
    script = CM["data"][f"resource.customizations.health.wanwide.io_{kind}"]
    fn = lua.execute(f"return function(obj)\n{script}\nend")

    def to_lua(v):
        if isinstance(v, dict):
            return lua.table_from({k: to_lua(x) for k, x in v.items()})
        if isinstance(v, list):
            return lua.table_from([to_lua(x) for x in v])
        return v

    hs = fn(to_lua(obj))
    return hs["status"], hs["message"]


def test_benchmark():
    assert health("Benchmark", {})[0] == "Progressing"
    assert health("Benchmark", {"status": {"phase": "Running", "progress": "1/4"}}) == (
        "Progressing", "phase Running, trials 1/4")
    assert health("Benchmark", {"status": {"phase": "Succeeded", "progress": "4/4"}})[0] == "Healthy"
    assert health("Benchmark", {"status": {"phase": "Failed", "progress": "4/4"}})[0] == "Degraded"
    invalid = {"status": {"phase": "Invalid", "conditions": [
        {"type": "Valid", "status": "False", "message": "spec.topologyRef: not found"}]}}
    assert health("Benchmark", invalid) == ("Degraded", "spec.topologyRef: not found")


def test_trial_and_topology():
    assert health("Trial", {"status": {"phase": "Loading"}}) == ("Progressing", "Loading")
    assert health("Trial", {"status": {"phase": "Failed", "message": "LoadFailed"}}) == ("Degraded", "LoadFailed")
    ok = {"status": {"matrix": "RTT 100ms", "conditions": [{"type": "Valid", "status": "True"}]}}
    assert health("Topology", ok) == ("Healthy", "RTT 100ms")
