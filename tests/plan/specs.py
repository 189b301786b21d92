"""Benchmark/Topology documents the planner tests share."""

from __future__ import annotations

import copy
from typing import Any

TOPOLOGIES: dict[str, dict[str, Any]] = {
    "uniform": {"generate": {"count": 3}, "network": {"default": {"rtt": "100ms"}}},
    "hierarchical": {  # pinned by the project's node label
        "generate": {"count": 6, "groups": 2},
        "placement": {"mode": "regionLabel"},
        "network": {"default": {"rtt": "150ms"}, "intraGroup": {"rtt": "20ms"}, "interGroup": {"rtt": "150ms", "loss": "0.5%"}},
    },
    "explicit": {  # mapped onto two named nodes
        "regions": [{"name": "paris", "group": "eu"}, {"name": "rennes", "group": "eu"}, {"name": "chicago", "group": "us"}],
        "placement": {"mode": "nodes", "nodes": ["node-a", "node-b"]},
        "network": {
            "default": {"rtt": "10ms", "rate": "1gbit"},
            "overrides": [
                {"from": "paris", "to": "chicago", "rtt": "110ms", "jitter": "2ms"},
                {"from": "rennes", "to": "chicago", "rtt": "120ms", "loss": "1%", "oneWay": True},
            ],
        },
    },
}


def benchmark(backend: str = "mariadb", topology: str = "uniform", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "topology": copy.deepcopy(TOPOLOGIES[topology]),
        "database": {"backend": backend},
        "workload": {
            "load": "high",
            "scenarios": [{"name": "authenticate_user_and_validate_token", "times": 10, "concurrency": 2},
                          {"name": "create_add_and_list_user_roles"}],
        },
        "faults": {
            "partitions": [{"regions": [_first(topology)], "start": "30s", "duration": "20s"}],
            "dropouts": [{"every": "5m", "for": "10s"}],
        },
        "results": {"s3": {"endpoint": "http://s3.example:7070", "bucket": "results", "secretRef": {"name": "s3-keys"}}},
    }
    body.update(spec)
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": f"{backend[:6]}-{topology[:5]}", "namespace": "lab"}, "spec": body}


def _first(topology: str) -> str:
    t = TOPOLOGIES[topology]
    return t["regions"][0]["name"] if "regions" in t else "r1"


def small_plan(name: str, regions: int):
    """The first TrialPlan of a Benchmark of ``regions`` generated regions loaded with authenticate only."""
    import yaml

    from wanwide.core.plan.load import load_documents
    from wanwide.core.plan.trial import plan

    doc = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name},
           "spec": {"topology": {"generate": {"count": regions}},
                    "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token"}]}}}
    docs = load_documents([yaml.safe_dump(doc)])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))[0]
