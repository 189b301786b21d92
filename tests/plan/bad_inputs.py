"""The table of invalid specs, shared by the planner test and the API-server admission test.

Each case: (id, documents, field named in the error, words of the fix, rejected at admission).
``admission`` is True when the CRD schema/CEL itself rejects it; the others are
caught by the planner (and reported by the operator as a status condition).
"""

from __future__ import annotations

import copy
from typing import Any

from tests.plan.specs import benchmark


def _b(**changes: Any) -> dict[str, Any]:
    doc = benchmark("mariadb", "explicit")
    doc["spec"]["faults"] = {}
    for path, value in changes.items():
        node = doc["spec"]
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value is _DEL:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return doc


class _Del:
    pass


_DEL = _Del()


def _topo(**net: Any) -> dict[str, Any]:
    d = _b()
    d["spec"]["topology"] = copy.deepcopy(d["spec"]["topology"])
    d["spec"]["topology"].update(net)
    return d


def _net(**link: Any) -> dict[str, Any]:
    d = _b()
    d["spec"]["topology"]["network"]["default"] = link
    return d


def _named(name: str) -> dict[str, Any]:
    d = _b()
    d["metadata"]["name"] = name
    return d


REGIONS3 = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
LONG_NAME = "a-benchmark-name-that-is-longer-than-forty"

CASES: list[tuple[str, dict[str, Any], str, str, bool]] = [
    ("override-unknown-region", _topo(network={"overrides": [{"from": "paris", "to": "tokyo", "rtt": "5ms"}]}),
     "spec.topology.network.overrides[0].to", "unknown region 'tokyo'", False),
    ("duplicate-regions", _topo(regions=[{"name": "a"}, {"name": "a"}]), "topology", "unique", True),
    ("negative-delay", _net(rtt="-5ms"), "default.rtt", "non-negative duration with a unit", True),
    ("unitless-delay", _net(rtt="20"), "default.rtt", "with a unit", True),
    ("unknown-unit-delay", _net(rtt="20 ms"), "default.rtt", "such as 20ms", True),
    ("loss-over-100", _net(rtt="1ms", loss="150%"), "default.loss", "from 0% to 100%", True),
    ("loss-without-percent", _net(rtt="1ms", loss="0.5"), "default.loss", "such as 1%", True),
    ("rate-without-unit", _net(rtt="1ms", rate="100"), "default.rate", "such as 100mbit", True),
    ("galera-two-regions", _topo(regions=[{"name": "a"}, {"name": "b"}]) | {}, "spec.database.backend",
     "allowFewerThanThree", False),
    ("light-load-unknown-region", _b(workload__loadRegion="tokyo", workload__load="light"),
     "spec.workload.loadRegion", "unknown region 'tokyo'", False),
    ("empty-matrix-axis", _b(matrix={"rtt": []}), "matrix.rtt", "at least 1", True),
    ("unknown-scenario", _b(workload__scenarios=[{"name": "boot_server_fast"}]), "scenarios[0]", "unknown scenario", True),
    ("unknown-scenario-in-matrix", _b(matrix={"scenario": ["nope"]}), "matrix", "unknown scenario", True),
    ("results-both", _b(results={"s3": {"endpoint": "http://s3:7070", "bucket": "results", "secretRef": {"name": "k"}},
                                  "objectBucketClaim": "obc"}), "results", "at most one of", True),
    ("topology-both", _b(topologyRef="other"), "spec", "exactly one of spec.topologyRef", True),
    ("topology-none", _b(topology=_DEL), "spec", "exactly one of spec.topologyRef", True),
    ("regions-and-generate", _topo(generate={"count": 3}), "spec.topology", "exactly one of regions", True),
    ("generate-more-groups-than-regions", _topo(regions=None, generate={"count": 2, "groups": 5}) ,
     "generate", "groups must not exceed count", True),
    ("override-same-region", _topo(network={"overrides": [{"from": "paris", "to": "paris", "rtt": "5ms"}]}),
     "overrides[0]", "different regions", True),
    ("override-twice", _topo(network={"overrides": [{"from": "paris", "to": "rennes", "rtt": "5ms"},
                                                     {"from": "rennes", "to": "paris", "rtt": "7ms"}]}),
     "spec.topology.network.overrides[1]", "already set", False),
    ("unknown-backend", _b(database={"backend": "postgres"}), "database.backend", "mariadb", True),
    ("probe-timeout-too-long", _b(database={"backend": "mariadb", "probeTimeout": "20m"}), "database.probeTimeout",
     "must be from 1s to 10m", True),
    ("unknown-rally-users", _b(runner={"rallyUsers": "Sometimes"}), "runner.rallyUsers", "PerSubtask", True),
    ("unknown-load", _b(workload__load="medium"), "workload.load", "light", True),
    ("load-region-with-high", _b(workload__loadRegion="paris", workload__load="high"), "workload",
     "only applies to load: light", True),
    ("zero-times", _b(workload__times=0), "workload.times", "greater than or equal to 1", True),
    ("unknown-field", _b(databse={"backend": "galera"}), "databse", "unknown field", True),
    ("bad-region-name", _topo(regions=[{"name": "Paris_1"}, {"name": "b"}, {"name": "c"}]), "regions[0].name",
     "lower-case letters, digits and '-'", True),
    ("primary-region-unknown", _b(database={"backend": "mariadb", "primaryRegion": "tokyo"}),
     "spec.database.primaryRegion", "unknown region 'tokyo'", False),
    ("partition-unknown-region", _b(faults={"partitions": [{"regions": ["tokyo"], "duration": "10s"}]}),
     "partitions[0].regions[0]", "unknown region", False),
    ("partition-everything", _b(faults={"partitions": [{"regions": ["paris", "rennes", "chicago"], "duration": "10s"}]}),
     "partitions[0].regions", "at least one region on the other side", False),
    ("dropout-longer-than-period", _b(faults={"dropouts": [{"every": "10s", "for": "1m"}]}), "dropouts[0].for",
     "shorter than its period", True),
    ("matrix-more-regions-than-listed", _b(matrix={"regions": [3, 9]}), "spec.matrix.regions",
     "lists only 3", False),
    ("bad-bucket", _b(results={"s3": {"endpoint": "http://s3:7070", "bucket": "A", "secretRef": {"name": "k"}}}),
     "results.s3.bucket", "valid S3 bucket name", True),
    ("parallelism-zero", _b(matrix={"parallelism": 0}), "matrix.parallelism", "greater than or equal to 1", True),
    # rounds added to a campaign (firstRepetition) count against the same bound as its repetitions
    ("rounds-over-max", _b(matrix={"repetitions": 60, "firstRepetition": 41}), "spec.matrix",
     "lower firstRepetition or repetitions", True),
    ("first-repetition-negative", _b(matrix={"firstRepetition": -1}), "matrix.firstRepetition",
     "greater than or equal to 0", True),
    # a matrix value below its minimum: refused, not a trial silently dropped
    ("matrix-regions-zero", _b(matrix={"regions": [0, 3]}), "spec.matrix.regions[0]", "use 1 or more", True),
    ("matrix-regions-over-max", _b(matrix={"regions": [3, 1001]}), "spec.matrix.regions[1]", "use 1000 or less", True),
    # quoted numbers and booleans: the API server refuses them, so does the planner
    ("quoted-times", _b(workload__times="10"), "spec.workload.times", 'write 10, not "10"', True),
    ("quoted-scenario-concurrency",
     _b(workload__scenarios=[{"name": "create_and_list_users", "concurrency": "4"}]),
     "spec.workload.scenarios[0].concurrency", 'write 4, not "4"', True),
    ("quoted-matrix-regions", _b(matrix={"regions": ["3"]}), "spec.matrix.regions[0]", 'write 3, not "3"', True),
    ("quoted-generate-count", _topo(regions=None, generate={"count": "3"}), "spec.topology.generate.count",
     'write 3, not "3"', True),
    ("quoted-boolean", _b(openstack={"keystone": {"cache": "false"}}), "spec.openstack.keystone.cache",
     'write false, not "false"', True),
    ("number-as-boolean", _b(database={"backend": "mariadb", "inMemory": 0}), "spec.database.inMemory",
     "write true or false", True),
    ("boolean-as-number", _b(runner={"maxAttempts": True}), "spec.runner.maxAttempts", "whole number", True),
    # spec.runner.pod: what Kubernetes itself would refuse, refused at admission with the fix
    ("toleration-exists-with-value",
     _b(runner={"pod": {"tolerations": [{"key": "gpu", "operator": "Exists", "value": "yes"}]}}),
     "spec.runner.pod.tolerations[0]", "takes no value", True),
    ("toleration-without-key", _b(runner={"pod": {"tolerations": [{"operator": "Equal", "value": "yes"}]}}),
     "spec.runner.pod.tolerations[0]", "add a key", True),
    ("toleration-unknown-effect", _b(runner={"pod": {"tolerations": [{"key": "gpu", "effect": "Never"}]}}),
     "spec.runner.pod.tolerations[0].effect", "NoExecute", True),
    ("runner-memory-not-a-quantity", _b(runner={"pod": {"resources": {"limits": {"memory": "2 GB"}}}}),
     "spec.runner.pod.resources.limits.memory", "Kubernetes quantity", True),
    ("runner-service-account-name", _b(runner={"pod": {"serviceAccountName": "Rally_SA"}}),
     "spec.runner.pod.serviceAccountName", "Kubernetes object name", True),
    # spec.placement: each mode with what it needs
    ("placement-nodes-without-a-list", _topo(placement={"mode": "nodes"}), "spec.topology.placement",
     "list the node names there", True),
    ("placement-list-without-its-mode", _topo(placement={"mode": "none", "nodes": ["node-a"]}),
     "spec.topology.placement", "set mode: nodes", True),
    ("placement-label-not-a-label-key", _topo(placement={"mode": "regionLabel", "label": "region name"}),
     "spec.topology.placement.label", "such as wanwide.io/region", True),
    ("duration-as-number", _net(rtt=20), "spec.topology.network.default.rtt", "write it as text", True),
    ("matrix-axis-not-a-list", _b(matrix={"regions": 3}), "spec.matrix.regions", "write a list, such as [3]", True),
    ("fractional-times", _b(workload__times=10.5), "spec.workload.times", "write a whole number", True),
    # names Kubernetes refuses, or that would make derived names too long
    ("name-upper-case", _named("My_Bench"), "Benchmark/My_Bench: metadata.name", "such as 'my-bench'", True),
    ("name-too-long", _named(LONG_NAME), f"Benchmark/{LONG_NAME}: metadata.name", "at most 40 characters", True),
]


def galera_case() -> None:
    for i, c in enumerate(CASES):
        if c[0] == "galera-two-regions":
            doc = copy.deepcopy(c[1])
            doc["spec"]["database"] = {"backend": "galera"}
            doc["spec"]["topology"]["network"].pop("overrides")
            CASES[i] = (c[0], doc, c[2], c[3], c[4])


galera_case()
