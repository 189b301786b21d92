"""The fixture keystone chart rendered for one region, kept as test data (the unit tier has no helm).

    .venv/bin/python -m tests.chartdata       # render it again with helm (tests/cluster checks it is current)
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import yaml

from tests.plan.specs import benchmark
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import TrialPlan, plan
from wanwide.providers.kubernetes.render.keystone import HelmRelease, releases

REPO = Path(__file__).resolve().parents[1]
FIXTURE = "charts/fixtures/keystone"
RENDERED = REPO / "tests" / "data" / "charts" / "keystone-fixture-rennes.yaml"
PASSWORDS = {"admin-password": "admin-pw", "db-root-password": "root-pw", "keystone-db-password": "ks-pw"}


def fixture_plan() -> TrialPlan:
    docs = load_documents([yaml.safe_dump(benchmark("galera", "explicit"))])
    (bench,) = docs.benchmarks
    return plan(bench, docs.topology_for(bench))[0]


def release(p: TrialPlan | None = None) -> HelmRelease:
    """The wave-1 release of region rennes, pointing at the fixture chart (its absolute path, as an operator's
    allowed chart sources name local charts)."""
    p = p or fixture_plan()
    rel = next(r for r in releases(p, PASSWORDS) if r.region == "rennes")
    return dataclasses.replace(rel, repo="", chart=str(REPO / FIXTURE))


def render(helm: str) -> str:
    """``helm template`` of :func:`release` (run from the repository root)."""
    rel = release()
    return subprocess.run([helm, "template", rel.name, rel.chart, "--namespace", rel.namespace, "--values", "-"],
                          input=yaml.safe_dump(rel.values), capture_output=True, text=True, check=True, cwd=REPO).stdout


if __name__ == "__main__":
    RENDERED.write_text(render(sys.argv[1] if len(sys.argv) > 1 else "helm"))
    print(RENDERED)
