"""The API server and the planner agree on every bad input of tests/plan/bad_inputs.py.

The planner refuses every case (tests/plan/test_bad_input.py); here the real API server,
with the generated CRDs, refuses exactly the cases marked ``admission`` and admits the
others (cross-field rules only the planner can check; the operator then reports the
Benchmark Invalid). A case marked wrongly fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.cluster.operator_env import install_crds
from tests.plan.bad_inputs import CASES, _b

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def ns(testcluster) -> str:
    install_crds(testcluster)
    return testcluster.namespace("valid")


def _dry_run(tc, ns: str, doc: dict[str, Any]):
    """``kubectl apply --dry-run=server`` of ``doc`` in ``ns``, its own name kept (nothing is stored)."""
    doc = {**doc, "metadata": {**doc["metadata"], "namespace": ns}}
    return tc.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(doc), check=False)


def test_the_valid_base_is_admitted(testcluster, ns):
    p = _dry_run(testcluster, ns, _b())
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(("case", "doc", "field", "admission"), [(c[0], c[1], c[2], c[4]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_api_server_verdict_matches_the_planners(testcluster, ns, case, doc, field, admission):
    p = _dry_run(testcluster, ns, doc)
    if not admission:
        assert p.returncode == 0, f"{case}: refused at admission too; mark it admission=True: {p.stderr}"
        return
    assert p.returncode != 0, f"{case}: the planner refuses it but the API server admits it"
    leaf = field.split(": ")[-1].split(".")[-1].split("[")[0]
    assert leaf in p.stderr, f"{case}: message does not name {leaf!r}: {p.stderr}"
