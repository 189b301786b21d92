"""The API server and the planner agree on every bad input of tests/plan/bad_inputs.py and on the hostile
corpus of tests/plan/hostile.py.

The planner refuses every case (tests/plan/test_bad_input.py, tests/plan/test_hostile.py); here the real
API server, with the generated CRDs (installed: their CEL rules are within the API server's cost budget),
refuses exactly the cases marked ``admission`` and admits the others (cross-field rules only the planner
can check; the operator then reports the Benchmark Invalid). A case marked wrongly fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.cluster.operator_env import install_crds
from tests.plan.bad_inputs import CASES, _b
from tests.plan.hostile import CASES as HOSTILE
from tests.plan.hostile import Hostile, base

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


def test_the_crds_install_with_their_rules(testcluster, ns):
    """The API server estimates every CEL rule's cost when a CRD is created and refuses one over its budget:
    the CRDs installed (the fixture) and are Established, each rule of the models in them."""
    import json

    from wanwide.crds import crds

    for crd in crds():
        live = json.loads(testcluster.kubectl("get", "crd", crd["metadata"]["name"], "-o", "json").stdout)
        assert live["spec"]["versions"][0]["schema"] == crd["spec"]["versions"][0]["schema"]


def test_the_hostile_base_is_admitted(testcluster, ns):
    p = _dry_run(testcluster, ns, base())
    assert p.returncode == 0, p.stderr


ASKED = [c for c in HOSTILE if c.admission is not None]


@pytest.mark.parametrize("c", ASKED, ids=[c.id for c in ASKED])
def test_api_server_verdict_on_the_hostile_corpus(testcluster, ns, c: Hostile):
    """Every document of the case created with server-side dry run: refused when ``admission`` (naming the
    field, or saying ``api_says``), all admitted when not (the planner alone refuses)."""
    refusals = []
    for doc in c.docs():
        p = _dry_run(testcluster, ns, doc)
        if p.returncode != 0:
            refusals.append(p.stderr)
    if not c.admission:
        assert not refusals, f"{c.id}: refused at admission too; mark it admission=True: {refusals}"
        return
    assert refusals, f"{c.id}: the planner refuses it but the API server admits it"
    says = c.api_says or c.field.split(": ")[-1].split(".")[-1].split("[")[0]
    assert any(says in r for r in refusals), f"{c.id}: the refusal does not say {says!r}: {refusals}"
