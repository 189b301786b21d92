"""One step of a Trial: observe its children, decide (pure), act, and the status that follows.

Everything is re-derived from the Trial's status and its labelled children, so a
restarted operator resumes where the last one stopped. Each step is idempotent.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from typing import Any

from wanwide import API_GROUP, API_VERSION
from wanwide.core import lifecycle as lc
from wanwide.core.api.benchmark import Benchmark
from wanwide.core.api.topology import TopologySpec
from wanwide.core.errors import PermanentError
from wanwide.core.plan.errors import Problems
from wanwide.core.plan.matrix import Point
from wanwide.core.plan.trial import TrialPlan, plan_point
from wanwide.providers.kubernetes.controller.actions import Decision, Executor
from wanwide.providers.kubernetes.controller.observe import Where, observe
from wanwide.providers.kubernetes.controller.phases import decide

A_PLAN_INPUT = "wanwide.io/plan-input"


class InvalidPlan(PermanentError):
    """The Trial's frozen plan input no longer plans: retrying cannot fix it."""

    reason = lc.INVALID_PLAN


class NotOwned(InvalidPlan):
    """The Trial is not one this operator made for its Benchmark (a forged or copied Trial): nothing is done for it,
    not even a clean-up, since the namespaces its plan names are not its own."""

    reason = lc.NOT_OWNED


def controller_of(trial: dict[str, Any]) -> dict[str, Any] | None:
    """The Trial's controlling owner reference when it is a Benchmark (None otherwise)."""
    refs = [r for r in trial["metadata"].get("ownerReferences") or []
            if r.get("controller") and r.get("kind") == "Benchmark" and r.get("apiVersion") == f"{API_GROUP}/{API_VERSION}"]
    return refs[0] if len(refs) == 1 else None


def owned_by(trial: dict[str, Any], bench_uid: str) -> bool:
    """Whether ``trial`` is controlled by the Benchmark with this uid (its name in spec.benchmark)."""
    ref = controller_of(trial)
    return (ref is not None and ref.get("uid") == bench_uid
            and ref.get("name") == (trial.get("spec") or {}).get("benchmark"))


_OWNERS: dict[str, str] = {}  # Trial uid → its Benchmark's uid, once checked against the live Benchmark
OWNERS_MAX = 4096


def check_owner(trial: dict[str, Any], plan: TrialPlan, live_uid: Any) -> str:
    """The uid of the Benchmark that made ``trial`` (whose plan is ``plan``), or NotOwned. ``live_uid()``: the uid
    of the Benchmark the Trial names, as the API server has it now (None: not there); asked once per Trial."""
    m = trial["metadata"]
    ref = controller_of(trial)
    name = (trial.get("spec") or {}).get("benchmark")
    if ref is None or ref.get("name") != name:
        raise NotOwned(f"Trial {m['namespace']}/{m['name']} is not controlled by its Benchmark {name!r} (no owner "
                       "reference to it): Trials are made by the wanwide operator only; delete this one")
    if (plan.bench_namespace, plan.benchmark) != (m["namespace"], name):
        raise NotOwned(f"Trial {m['namespace']}/{m['name']}'s plan is for Benchmark "
                       f"{plan.bench_namespace}/{plan.benchmark}, not its own {m['namespace']}/{name}: delete it")
    if _OWNERS.get(m.get("uid") or "") == ref["uid"]:
        return ref["uid"]
    uid = live_uid()
    if uid != ref["uid"]:
        raise NotOwned(f"Trial {m['namespace']}/{m['name']} names Benchmark {name!r} with uid {ref['uid']}, "
                       f"{'which is gone' if uid is None else 'not the one there'}: delete it")
    if len(_OWNERS) >= OWNERS_MAX:
        _OWNERS.clear()
    _OWNERS[m.get("uid") or ""] = uid
    return uid


def plan_input(bench: dict[str, Any], topology: TopologySpec, point: Point) -> str:
    """The frozen input of a trial: edits to the Benchmark never change a trial in flight."""
    return json.dumps({
        "benchmark": {"apiVersion": bench["apiVersion"], "kind": "Benchmark",
                      "metadata": {"name": bench["metadata"]["name"], "namespace": bench["metadata"]["namespace"]},
                      "spec": bench["spec"]},
        "topology": topology.wire(),
        "point": {"index": point.index, "repetition": point.repetition, "values": point.values,
                  "position": point.position, "seed": point.seed},
    }, sort_keys=True)


def trial_plan(trial: dict[str, Any]) -> TrialPlan:
    """The Trial's plan from its frozen input; InvalidPlan says why it no longer plans."""
    try:
        text = trial["metadata"]["annotations"][A_PLAN_INPUT]
    except (KeyError, TypeError):
        text = None
    return _planned(text)


@functools.lru_cache(maxsize=64)  # the input is frozen: plan once per trial, not once per step
def _planned(text: str | None) -> TrialPlan:
    try:
        if text is None:
            raise KeyError(A_PLAN_INPUT)
        data = json.loads(text)
        bench = Benchmark.model_validate(data["benchmark"])
        pt = data["point"]
        point = Point(pt["index"], pt["repetition"], pt["values"], pt.get("position"), pt.get("seed"))
        topology = TopologySpec.model_validate(data["topology"])
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidPlan(f"annotation {A_PLAN_INPUT} is missing or unreadable ({e}): "
                          "the Trial was not made by this operator; delete it") from None
    problems = Problems()
    p = plan_point(bench, topology, point, problems)
    if p is None:
        raise InvalidPlan("; ".join(map(str, problems.items)))
    return p


def where(trial: dict[str, Any], **settings: Any) -> Where:
    ref = controller_of(trial)
    return Where(instance=ref["uid"] if ref else None,
                 plan_generation=int((trial.get("spec") or {}).get("planGeneration", 0)), **settings)


def step(w: Where, executor: Executor, plan: TrialPlan, status: dict[str, Any], now: dt.datetime) -> Decision:
    """Observe → decide → act, once, for the Trial's current phase."""
    obs = observe(w, plan, status)
    decision = decide(plan, status, obs, now)
    executor.run(decision.actions)
    return decision


__all__ = ["A_PLAN_INPUT", "InvalidPlan", "NotOwned", "check_owner", "controller_of", "owned_by", "plan_input", "step",
           "trial_plan", "where"]
