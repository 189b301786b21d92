"""The deployment as a plan of stages, which the lifecycle steps through in the phase ``Provisioning`` (machine.py).

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

from wanwide.core.plan import controlplane as ctl
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
    service: str  # "namespaces" (where the trial lives: namespaces, links), "database", "keystone"; with
    # spec.openstack's other services "openstack-db" (the control planes' own MariaDBs), "messaging", "placement",
    # "glance", "neutron", "nova" (API, conductor, scheduler, cell setup), "nova-compute" (the fake computes)
    regions: tuple[str, ...]
    after: tuple[str, ...] = ()
    schema: bool = False  # this stage creates the service's schema (its first region)
    tries: int = STAGE_TRIES


def stages(plan: TrialPlan) -> tuple[Stage, ...]:
    """The trial's deployment in order: its place, the database, then Keystone in the schema owner's region
    and in every other region; with spec.openstack's other services (:func:`service_stages`), theirs."""
    regions = tuple(plan.region_names)
    owner = plan.schema_region
    others = tuple(r for r in regions if r != owner)
    database = (plan.primary_region,) if plan.backend == "mariadb" else regions
    out = [Stage(PLACE, "namespaces", regions),
           Stage("database", "database", database, after=(PLACE,)),
           Stage("keystone-schema", "keystone", (owner,), after=("database",), schema=True)]
    if others:
        out.append(Stage("keystone", "keystone", others, after=("keystone-schema",)))
    return tuple(out) + service_stages(plan, out[-1].name)


def service_stages(plan: TrialPlan, keystone: str) -> tuple[Stage, ...]:
    """The stages of the services beyond Keystone (core/plan/controlplane.py), each in the regions its processes
    run in, once Keystone is everywhere (``keystone``: its last stage; a service registers itself in the
    catalog): the control planes' own MariaDBs and the bus (once the place exists), Placement, Glance and
    Neutron once their database is there, Nova's API, conductor and scheduler once all of those are, then the
    fake computes. Every control plane creates its own schemas (its databases are its own: a local MariaDB, or
    names of its own in the trial's database), so each such stage is a ``schema`` stage in all its regions."""
    cp = plan.control_plane
    if cp is None or not cp.services:
        return ()
    out: list[Stage] = []
    done: dict[str, str] = {}  # service → its stage

    def add(name: str, service: str, role: str, after: tuple[str, ...], schema: bool = False) -> None:
        where = tuple(cp.regions_of(role))
        if where:
            out.append(Stage(name, service, where, after=after, schema=schema))
            done[service] = name

    def databases(service: str) -> tuple[str, ...]:
        places = {p.databases[service].place for p in cp.planes if service in p.databases}
        return tuple(("openstack-db" if pl == "local" else "database") for pl in sorted(places))

    add("openstack-db", "openstack-db", ctl.OPENSTACK_DB, (PLACE,))
    if cp.enabled("messaging"):
        add("messaging", "messaging", ctl.BUS, (PLACE,))
    for svc in ("placement", "glance", "neutron"):
        if cp.enabled(svc):
            bus = ("messaging",) if svc == "neutron" else ()
            add(svc, svc, ctl.ROLE_OF[svc], (keystone, *databases(svc), *bus), schema=True)
    if cp.enabled("nova"):
        needed = tuple(done[s] for s in ("messaging", "placement", "glance", "neutron") if s in done)
        add("nova", "nova", ctl.NOVA_API, (keystone, *databases("nova"), *needed), schema=True)
        add("nova-compute", "nova-compute", ctl.NOVA_COMPUTE, ("nova",))
    return tuple(out)


__all__ = ["CHART_REFUSED", "DEPLOY_FAILED", "NAMESPACE_TAKEN", "PLACE", "REFUSALS", "RETRY_WAIT_S", "STAGE_TRIES",
           "Stage", "service_stages", "stages"]
