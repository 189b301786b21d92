"""The deployment as a plan of stages, and how the lifecycle steps through it (the phase ``Provisioning``).

A trial's deployment is a list of :class:`Stage`: where the trial lives first (its namespaces, its
links), then its database, then each service: the region that creates the service's schema before
the others. A stage runs once the stages it comes after are done; stages whose turn has come run
side by side. The lifecycle asks a provider to ``Deploy`` each stage whose turn has come (``ahead`` for
the others once the trial's place exists: what of them waits on nothing may go first) and reads back
each stage's :class:`~wanwide.core.lifecycle.step.Progress`. A stage that fails is brought up again
(``retry``) until it failed :data:`STAGE_TRIES` times in all (``DeployFailed``); one the provider
refuses (:data:`REFUSALS`: where it would go belongs to someone else, or what it would apply is not what
wanwide applies) fails the trial at once, nothing of it applied. A new service (a message queue, a
compute service) is new stages here, and a renderer for them in each provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from wanwide.core.lifecycle.state import done, marked
from wanwide.core.lifecycle.step import (
    Deploy,
    Event,
    LifecycleAction,
    Progress,
    Seen,
    Status,
    Step,
    fail,
)
from wanwide.core.plan.trial import TrialPlan

STAGE_TRIES = 3  # a failed stage is brought up again until it failed this often in all
RETRY_WAIT_S = 5.0  # times the failures so far: the wait before a failed stage is brought up again
DEPLOY_FAILED = "DeployFailed"
NAMESPACE_TAKEN = "NamespaceTaken"  # where the trial would go belongs to someone else: nothing applied there
CHART_REFUSED = "ChartRefused"  # what a stage would apply is not what wanwide applies: nothing of it applied
REFUSALS = (NAMESPACE_TAKEN, CHART_REFUSED)
PLACE = "namespaces"  # the first stage: where the trial lives


@dataclass(frozen=True)
class Stage:
    """One stage of a trial's deployment: bring ``service`` up in ``regions`` once ``after`` are done."""

    name: str
    service: str  # "namespaces" (where the trial lives: namespaces, links), "database", "keystone"
    regions: tuple[str, ...]
    after: tuple[str, ...] = ()
    schema: bool = False  # this stage creates the service's schema (its first region)
    tries: int = STAGE_TRIES


def stages(plan: TrialPlan) -> tuple[Stage, ...]:
    """The trial's deployment in order: its place, the database, then Keystone in the schema owner's region
    and in every other region."""
    regions = tuple(plan.region_names)
    owner = plan.schema_region
    others = tuple(r for r in regions if r != owner)
    database = (plan.primary_region,) if plan.backend == "mariadb" else regions
    out = [Stage(PLACE, "namespaces", regions),
           Stage("database", "database", database, after=(PLACE,)),
           Stage("keystone-schema", "keystone", (owner,), after=("database",), schema=True)]
    if others:
        out.append(Stage("keystone", "keystone", others, after=("keystone-schema",)))
    return tuple(out)


def provisioning(plan: TrialPlan, status: Status, seen: Seen, now: datetime) -> Step:
    """One step through the deployment's stages (see the module's docstring); Injecting once all are done."""
    plan_stages = stages(plan)
    of = {s.name: seen.stages.get(s.name, Progress()) for s in plan_stages}
    for s in plan_stages:
        refused = of[s.name].refused
        if refused is not None:
            if refused[0] not in REFUSALS:
                raise ValueError(f"stage {s.name} refused with {refused[0]!r}: not one of {REFUSALS}")
            return fail(*refused)
    finished = done(status)
    events: list[LifecycleAction] = []
    for s in plan_stages:
        if s.name not in finished and of[s.name].done and all(a in finished for a in s.after):
            finished.add(s.name)
            events.append(Event("StageDeployed", f"{s.name}: {s.service} in {len(s.regions)} region(s)"))
    tries = dict(status.get("deployTries") or {})
    retried: set[str] = set()
    for s in plan_stages:
        why = of[s.name].failed
        if s.name in finished or why is None:
            continue
        tries[s.name] = tries.get(s.name, 0) + 1
        if tries[s.name] >= s.tries:
            return fail(DEPLOY_FAILED, f"stage {s.name} ({s.service} in {', '.join(s.regions[:5])}"
                                       f"{' …' if len(s.regions) > 5 else ''}) failed {tries[s.name]} times; "
                                       f"last: {why}", {"deployTries": tries}, events)
        retried.add(s.name)
        events.append(Event("DeployRetry", f"stage {s.name} failed ({tries[s.name]} of {s.tries} tries), trying "
                                           f"again: {why}", "Warning"))
    record = {**marked(status, *finished), **({"deployTries": tries} if retried else {})}
    if all(s.name in finished for s in plan_stages):
        return Step("Injecting", "Deployed", f"{len(plan_stages)} stage(s) deployed: "
                                             + ", ".join(s.name for s in plan_stages), record, events)
    turn = [s for s in plan_stages if s.name not in finished and all(a in finished for a in s.after)]
    later = [s for s in plan_stages if s.name not in finished and s not in turn] if PLACE in finished else []
    waits = [f"{s.name}: {of[s.name].waiting}" for s in turn if of[s.name].waiting and s.name not in retried]
    wakes = [w for s in turn if (w := of[s.name].wake_s) is not None]
    wakes += [RETRY_WAIT_S * tries[n] for n in retried]
    return Step(message="; ".join(waits) or f"deploying {', '.join(s.name for s in turn)}", status=record,
                actions=[*events, *(Deploy(s, retry=s.name in retried) for s in turn),
                         *(Deploy(s, ahead=True) for s in later)],
                wake_s=min(wakes) if wakes else None)


__all__ = ["CHART_REFUSED", "DEPLOY_FAILED", "NAMESPACE_TAKEN", "PLACE", "REFUSALS", "STAGE_TRIES", "Stage",
           "provisioning", "stages"]
