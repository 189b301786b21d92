"""Trials and namespaces are the operator's (issue 43; docs/security.md 9–12): decisions, no cluster."""

from __future__ import annotations

import copy
import datetime as dt

import pytest

from tests.chartdata import fixture_plan
from wanwide import API_GROUP, API_VERSION
from wanwide.core.plan import names
from wanwide.providers.kubernetes.controller import ownership, phases
from wanwide.providers.kubernetes.controller.trial import NotOwned, check_owner, owned_by
from wanwide.providers.kubernetes.render import namespaces

P = fixture_plan()
UID = "1111-2222"
T0 = dt.datetime(2026, 11, 29, 12, tzinfo=dt.UTC)


def _trial(uid: str = UID, name: str | None = None, ns: str | None = None, controller: bool = True) -> dict:
    return {"metadata": {"name": P.name, "namespace": ns or P.bench_namespace, "uid": "trial-uid-" + uid,
                         "ownerReferences": [{"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "Benchmark",
                                              "name": name or P.benchmark, "uid": uid, "controller": controller}]},
            "spec": {"benchmark": P.benchmark}}


def test_a_trial_is_the_benchmarks_only_by_its_controlling_owner_and_uid():
    assert check_owner(_trial(), P, lambda: UID) == UID
    with pytest.raises(NotOwned, match="not controlled by its Benchmark"):
        check_owner(_trial(controller=False), P, lambda: UID)
    with pytest.raises(NotOwned, match="not controlled"):
        check_owner(_trial(name="other"), P, lambda: UID)
    with pytest.raises(NotOwned, match="which is gone"):
        check_owner(_trial("9999"), P, lambda: None)
    with pytest.raises(NotOwned, match="not the one there"):
        check_owner(_trial("8888"), P, lambda: "a-namesake-made-since")
    # the plan names another namespace than the Trial's own: the Secrets it copies would come from there
    with pytest.raises(NotOwned, match="plan is for Benchmark"):
        check_owner(_trial(ns="victim"), P, lambda: UID)
    assert owned_by(_trial(), UID) and not owned_by(_trial(), "x") and not owned_by(_trial(controller=False), UID)


def test_a_namespace_is_the_trials_only_with_its_labels_and_owner_uid():
    (ns, *_) = namespaces(P, UID)
    assert ownership.namespace_ours(ns, UID, P.name)
    assert not ownership.namespace_ours(ns, "other-uid", P.name)
    assert not ownership.namespace_ours(ns, UID, "another-trial")
    assert not ownership.namespace_ours(ns, None)
    bare = {"metadata": {"name": ns["metadata"]["name"], "labels": {names.L_TRIAL: P.name}}}
    assert not ownership.namespace_ours(bare, UID, P.name)
    existing = {ns["metadata"]["name"]: bare}
    assert ownership.foreign(existing, P.namespaces, UID, P.name) == [ns["metadata"]["name"]]
    assert ownership.foreign({ns["metadata"]["name"]: ns}, P.namespaces, UID, P.name) == []


def test_a_trial_whose_namespace_someone_else_made_fails_before_it_applies_anything():
    status = {"phase": "Provisioning", "phaseStartTime": "2026-11-29T12:00:00Z"}
    taken = P.namespaces[0]
    d = phases.decide(P, status, {"namespaces_taken": [taken], "owner": UID}, T0)
    assert (d.step.phase, d.step.reason) == ("CleaningUp", "NamespaceTaken") and taken in d.step.message
    assert not [a for a in d.actions if type(a).__name__ == "Apply"]


def test_the_trials_namespaces_carry_the_owner_uid_and_the_golden_rendering_does_not():
    assert all(n["metadata"]["labels"][names.L_OWNER] == UID for n in namespaces(P, UID))
    assert all(names.L_OWNER not in n["metadata"]["labels"] for n in namespaces(copy.deepcopy(P)))


def test_namespace_names_carry_a_40_bit_benchmark_tag():
    tag = names.bench_tag(P.bench_namespace, P.benchmark)
    assert len(tag) == 10 and all(f"-{tag}-t" in n for n in P.namespaces)
