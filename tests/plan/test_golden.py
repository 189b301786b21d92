"""Golden files: each backend × {uniform, hierarchical, explicit pairs}, rendered in full; and a 3-region
Benchmark with Nova in each shape (its control plane in the header, its Rally task's contexts).

Regenerate on purpose with ``UPDATE_GOLDEN=1 pytest tests/plan/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import os

import pytest
import yaml

from tests.plan.specs import benchmark
from wanwide.cli import plan_stream

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden")
CASES = [(b, t) for b in ("mariadb", "galera", "cockroachdb") for t in ("uniform", "hierarchical", "explicit")]


@pytest.mark.parametrize(("backend", "topology"), CASES)
def test_golden(backend: str, topology: str) -> None:
    text = plan_stream([yaml.safe_dump(benchmark(backend, topology))], 0, False, False)
    path = os.path.join(GOLDEN, f"{backend}-{topology}.yaml")
    if os.environ.get("UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read(), f"rendering changed: review, then UPDATE_GOLDEN=1 to accept ({path})"


NOVA = {"workload": {"load": "high", "scenarios": [{"name": "NovaServers.boot_and_delete_server", "times": 10,
                                                    "concurrency": 2},
                                                   {"name": "GlanceImages.create_and_delete_image"},
                                                   {"name": "authenticate_user_and_validate_token"}]}}
NOVA_CASES = {
    "regions": {"nova": {"enabled": True, "computes": 2}, "neutron": {"enabled": True}},
    "stretched": {"shape": "stretched", "nova": {"enabled": True, "computes": 2}, "neutron": {"enabled": True}},
}


@pytest.mark.parametrize("shape", NOVA_CASES)
def test_golden_nova(shape: str) -> None:
    doc = benchmark("galera", "uniform", openstack=NOVA_CASES[shape], **NOVA)
    doc["metadata"]["name"] = f"nova-{shape[:6]}"
    text = plan_stream([yaml.safe_dump(doc)], 0, False, False)
    path = os.path.join(GOLDEN, f"nova-{shape}.yaml")
    if os.environ.get("UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read(), f"rendering changed: review, then UPDATE_GOLDEN=1 to accept ({path})"
