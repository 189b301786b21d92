"""Which trials the lab runs on one deployment (pure: no root needed)."""

from __future__ import annotations

import yaml

from wanwide.core.lifecycle import deployment_key
from wanwide.core.lifecycle import deployments as groups
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan

TOPOLOGY = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"generate": {"count": 3}}}


def _trials(matrix: dict, **spec) -> list:
    bench = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b"},
             "spec": {"topologyRef": "t", "matrix": matrix,
                      "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token"}]}, **spec}}
    docs = load_documents([yaml.safe_dump_all([TOPOLOGY, bench])])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))


def _ids(gs: list) -> list[list[str]]:
    return [[p.id for p in g] for g in gs]


def test_network_and_load_share_backend_does_not() -> None:
    trials = _trials({"backend": ["mariadb", "galera"], "rtt": ["0ms", "100ms"], "load": ["light", "high"]})
    gs = groups(trials)
    assert sorted(p.backend for g in gs for p in g[:1]) == ["galera", "mariadb"] and all(len({p.backend for p in g}) == 1 for g in gs)
    assert sorted(len(g) for g in gs) == [4, 4]
    # groups in the run order (positions), trials in run order inside each
    assert [g[0].position for g in gs] == sorted(g[0].position for g in gs)
    assert all([p.position for p in g] == sorted(p.position for p in g) for g in gs)
    assert _ids(groups(trials, fresh=True)) == [[p.id] for p in sorted(trials, key=lambda p: p.position)]


def test_region_count_and_restart_options_split() -> None:
    trials = _trials({"regions": [2, 3], "rtt": ["0ms", "50ms"]})
    assert sorted(len(g) for g in groups(trials)) == [2, 2]
    # Galera timeouts need a restart above 150 ms RTT: 300 ms gets its own deployment
    gal = _trials({"rtt": ["0ms", "50ms", "300ms"]}, database={"backend": "galera"})
    gs = groups(gal)
    assert sorted(sorted(p.parameters["rtt"] for p in g) for g in gs) == [["0ms", "50ms"], ["300ms"]]
    assert deployment_key(gal[0]) == deployment_key(gal[1])


def test_send_windows_are_the_same_at_every_rtt_unless_the_benchmark_sets_them() -> None:
    """Issue 46: a delay's effect must not carry a window change too; a Benchmark sweeps the window itself."""
    gal = _trials({"rtt": ["0ms", "50ms", "300ms"]}, database={"backend": "galera"})
    assert [p.database.galera_dynamic for p in gal] == [{"evs.send_window": "512", "evs.user_send_window": "256"}] * 3
    assert _trials({"rtt": ["50ms"]})[0].database.galera_dynamic == {}
    own = _trials({"rtt": ["0ms", "300ms"]}, database={"backend": "galera", "galera": {
        "providerOptions": {"evs.send_window": "4", "evs.user_send_window": "2"}}})
    assert [p.database.galera_dynamic for p in own] == [{"evs.send_window": "4", "evs.user_send_window": "2"}] * 2
