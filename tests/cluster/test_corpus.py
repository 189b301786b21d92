"""The planner and the real API server agree on a generated corpus (tests/plan/corpus.py).

Every file is planned as ``wanwide plan`` does and each of its documents is created on the
API server with server-side dry-run and strict field validation (what ``kubectl apply``
does). The API server refuses => the planner refuses; the planner alone refuses only for
the rules listed in tests/plan/agreement.py. The figures are printed (``-s``).
"""

from __future__ import annotations

import collections
import copy
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.cluster.operator_env import install_crds
from tests.plan.agreement import semantic_keys
from tests.plan.bad_inputs import CASES
from tests.plan.corpus import Case, corpus, planner_verdict

pytestmark = pytest.mark.cluster
PLURALS = {"Benchmark": "benchmarks", "Topology": "topologies"}


@pytest.fixture(scope="module")
def api(testcluster):
    from kubernetes import client, config

    install_crds(testcluster)
    ns = testcluster.namespace("corpus")
    return client.CustomObjectsApi(config.new_client_from_config(str(testcluster.kubeconfig))), ns


def api_verdict(api: Any, ns: str, case: Case) -> str | None:
    """None when the API server admits every document of the case, else its first refusal."""
    from kubernetes.client.exceptions import ApiException

    for doc in case.docs:
        body = copy.deepcopy(doc)
        if isinstance(body.get("metadata"), dict):
            body["metadata"]["namespace"] = ns
        try:
            api.create_namespaced_custom_object("wanwide.io", "v1alpha1", ns, PLURALS[doc["kind"]], body,
                                                dry_run="All", field_validation="Strict")
        except ApiException as e:
            try:
                return f"{doc['kind']}: {json.loads(e.body)['message']}"
            except (ValueError, KeyError, TypeError):
                return f"{doc['kind']}: {e.status} {e.reason}"
    return None


def test_planner_and_api_server_agree_on_the_corpus(api):
    client, ns = api
    t0 = time.monotonic()
    cases = corpus() + [Case(f"hand-{c[0]}", "hand", [c[1]]) for c in CASES]
    t1 = time.monotonic()
    with ThreadPoolExecutor(4) as pool:  # the API server's answers arrive while the planner works
        answers = pool.map(lambda c: api_verdict(client, ns, c), cases)
        planner = [planner_verdict(c) for c in cases]
        server = list(answers)
    t2 = time.monotonic()
    figures: collections.Counter[tuple[str, str]] = collections.Counter()
    semantic: collections.Counter[str] = collections.Counter()
    wrong: list[str] = []
    for c, p, a in zip(cases, planner, server, strict=True):
        figures[(c.category.split("-")[0] if c.category.startswith("example") else c.category,
                 f"planner {'refuses' if p else 'plans'}, API {'refuses' if a else 'admits'}")] += 1
        if a and not p:
            wrong.append(f"{c.id} ({c.tags}): the API server refuses, the planner plans: {a}")
        if p and not a:
            keys = semantic_keys(p)
            if None in keys:
                wrong.append(f"{c.id} ({c.tags}): only the planner refuses, not a listed semantic rule: {p}")
            semantic.update(k for k in keys if k)
    print(f"\n{len(cases)} files ({t1 - t0:.0f} s to generate, {t2 - t1:.0f} s to judge); verdicts by category:")
    for (cat, verdict), n in sorted(figures.items()):
        print(f"  {cat:16} {verdict:36} {n}")
    print("planner-only refusals by rule:", dict(semantic))
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:40])
    assert sum(1 for p in planner if p is None) > 100, "the corpus must hold plenty of valid files"
