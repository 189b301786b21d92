"""A fault window measures the database, not its operator: the plan sizes the Galera members'
liveness and mariadb-operator's recovery from the longest cut it schedules."""

from __future__ import annotations

import yaml

from tests.plan.specs import benchmark
from wanwide.cli import plan_stream


def _galera(faults: dict) -> dict:
    b = benchmark("galera", "uniform", faults=faults)
    docs = [d for d in yaml.safe_load_all(plan_stream([yaml.safe_dump(b)], 0, False, False)) if d]
    return next(d for d in docs if d.get("kind") == "MariaDB")["spec"]


def test_a_40s_partition_neither_restarts_the_cut_member_nor_recovers_the_cluster():
    spec = _galera({"partitions": [{"regions": ["r2"], "start": "1m", "duration": "40s"}]})
    probe = spec["livenessProbe"]
    # the member cut off for 40 s fails its liveness (non-primary) for 40 s and then rejoins:
    # it is not restarted before the cut and the rejoin margin (120 s) are over
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 40 + 120
    assert spec["galera"]["recovery"]["clusterHealthyTimeout"] == "160s"


def test_the_longest_cut_decides_a_dropout_included():
    spec = _galera({"partitions": [{"regions": ["r2"], "start": "1m", "duration": "20s"}],
                    "dropouts": [{"every": "5m", "for": "90s"}]})
    assert spec["livenessProbe"]["periodSeconds"] * spec["livenessProbe"]["failureThreshold"] >= 90 + 120
    assert spec["galera"]["recovery"]["clusterHealthyTimeout"] == "210s"


def test_without_cuts_the_operator_defaults_stay():
    spec = _galera({"lossWindows": [{"regions": ["r2"], "start": "1m", "duration": "40s", "loss": "5%"}]})
    assert "livenessProbe" not in spec  # mariadb-operator's own (3 × 10 s)
    assert spec["galera"]["recovery"]["clusterHealthyTimeout"] == "30s"


def test_chaos_selects_only_running_pods():
    """A region's namespace keeps the chart's finished Jobs; Chaos Mesh cannot inject into or recover a pod
    without a running container (on the real node one held a partition's recovery for over a minute)."""
    b = benchmark("galera", "uniform", faults={"partitions": [{"regions": ["r2"], "start": "1m", "duration": "40s"}]})
    docs = [d for d in yaml.safe_load_all(plan_stream([yaml.safe_dump(b)], 0, False, False)) if d]
    chaos = [d for d in docs if d.get("kind") == "NetworkChaos"]
    assert chaos and {d["spec"]["action"] for d in chaos} >= {"netem", "partition"}
    for d in chaos:
        for sel in (d["spec"]["selector"], d["spec"]["target"]["selector"]):
            assert sel["podPhaseSelectors"] == ["Running"], d["metadata"]["name"]


def _mariadb_spec(b: dict) -> dict:
    docs = [d for d in yaml.safe_load_all(plan_stream([yaml.safe_dump(b)], 0, False, False)) if d]
    return next(d for d in docs if d.get("kind") == "MariaDB")["spec"]


def test_a_probe_timeout_reaches_both_probes_and_keeps_the_cut_thresholds():
    """spec.database.probeTimeout (a VM node under TCG: the 5 s default restarted db-0 7 times in 63 min)
    sets the liveness and readiness probes' timeout only; mariadb-operator keeps its probe command."""
    b = benchmark("mariadb", "uniform")
    b["spec"]["database"]["probeTimeout"] = "90s"
    spec = _mariadb_spec(b)
    assert spec["livenessProbe"] == {"timeoutSeconds": 90} and spec["readinessProbe"] == {"timeoutSeconds": 90}
    b = benchmark("galera", "uniform", faults={"partitions": [{"regions": ["r2"], "start": "1m", "duration": "40s"}]})
    b["spec"]["database"]["probeTimeout"] = "2.5s"  # whole seconds, rounded up
    spec = _mariadb_spec(b)
    assert spec["livenessProbe"]["timeoutSeconds"] == 3 and spec["readinessProbe"] == {"timeoutSeconds": 3}
    assert spec["livenessProbe"]["periodSeconds"] * spec["livenessProbe"]["failureThreshold"] >= 40 + 120
    assert "readinessProbe" not in _mariadb_spec(benchmark("mariadb", "uniform"))
