"""A lab deployment's stages brought up (core/lifecycle/deploy.py): the lab's renderer of each service.

The trial's place is its network namespaces and links (:func:`place`: new, every shaped link lifted until
the lifecycle puts the WAN in force, as the Kubernetes provider's NetworkChaos comes after its deployment;
or a shared deployment re-shaped for the trial); then each stage's services, on that unconstrained WAN:
the database (:func:`database`: MariaDB in the primary region, or a Galera member per
region) and Keystone (:func:`keystone`: the schema owner's region first, with ``db_sync``; the others in
parallel); with spec.openstack's other services, each of their stages (providers/lab/cloud.py: the control
planes' MariaDBs, RabbitMQ, Placement, Glance, Neutron's server, Nova, the fake computes). A stage brought up again
(the lifecycle retries it) first stops what its failed try started. A new service is a function here, named in
:data:`SERVICES`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wanwide.core import lifecycle as lc
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab import cloud, netns
from wanwide.providers.lab.deployment import Deployment
from wanwide.providers.lab.procs import keep_tails
from wanwide.providers.lab.services import Service, Services

ADMIN_PASSWORD = "wanwide-admin"
DB_PASSWORD = "wanwide-keystone"
ROOT_PASSWORD = "wanwide-root"
Say = Callable[..., None]


def place(p: TrialPlan, dep: Deployment | None, shared: bool, *, shaper: str, layout: str, work: Path,
          say: Say) -> Deployment:
    """The trial's namespaces and links: ``dep`` re-shaped for ``p`` when it serves it, else built anew (links a
    later trial or a fault window re-shapes go through the shaper from the start)."""
    if dep is not None:
        if dep.shaped_for != p.id:
            say("Provisioning", f"re-shaping the links of deployment {dep.id} (trial {len(dep.trials) + 1} on it)")
            dep.adapt(p)
            dep.shaped_for = p.id
        return dep
    net = netns.build(p.region_names, p.links, shaper=shaper, handle_signals=False,
                      shapeable=shared or bool(p.faults), benchmark=p.benchmark, layout=layout,
                      group_of={r.name: r.group for r in p.regions})
    d = net.describe()
    say("Provisioning", f"{len(p.regions)} namespaces, shaper {net.shaper}, {d['layout']} layout "
        f"({len(net.pairs) + len(net.edges)} links{', hubs ' + ', '.join(d['hubs']) if d['hubs'] else ''})"
        + (" (a deployment shared by this Benchmark's trials)" if shared else "")
        + "; services start on it unconstrained, then it is shaped")
    run_dir = work / f"{p.benchmark}-{net.tag}"
    net.state.add_dir(run_dir)  # data, keys, service logs: removed with the network
    try:
        dep = Deployment(net, Services(net, run_dir), {}, {}, shared, shaped_for=p.id)
    except BaseException:  # a run dir the services' users cannot enter: nothing built stays behind
        net.destroy()
        raise
    try:
        net.lift()
    except BaseException:
        dep.close()
        raise
    return dep


def database(dep: Deployment, p: TrialPlan, stage: lc.Stage, say: Say) -> None:
    """Region → the database endpoint its Keystone uses, in ``dep.db``."""
    svc = dep.svc
    grant = (f"CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '{ROOT_PASSWORD}'; "
             "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%'; FLUSH PRIVILEGES;")
    cfg = p.database
    if p.backend == "mariadb":
        db = svc.start_mariadb(p.primary_region, in_memory=cfg.in_memory, server=cfg.server)
        svc.create_database(db, password=DB_PASSWORD)
        svc.sql(db, grant)
        dep.db = {r: db for r in p.region_names}
    else:
        members = svc.start_galera(p.region_names, in_memory=cfg.in_memory, provider_options=cfg.galera,
                                   server=cfg.server)
        svc.create_database(members[0], password=DB_PASSWORD)
        svc.sql(members[0], grant)
        dep.db = dict(zip(p.region_names, members, strict=True))
    dep.galera_dynamic = p.database.galera_dynamic


def keystone(dep: Deployment, p: TrialPlan, stage: lc.Stage, say: Say) -> None:
    """Keystone (and its memcached) in each region of ``stage``, in parallel; the schema stage's runs ``db_sync``."""
    svc = dep.svc

    def one(r: str) -> Service:
        mc = svc.start_memcached(r) if p.keystone.cache else None
        ks = svc.start_keystone(r, db_host=dep.db[r].host, db_port=dep.db[r].port, db_password=DB_PASSWORD,
                                memcached=mc, admin_password=ADMIN_PASSWORD, db_sync=stage.schema,
                                config=p.keystone, workers=p.keystone.processes)
        say("Provisioning", f"keystone {r} up, {p.keystone.processes} process(es) ({ks.start_s:.0f}s)")
        return ks

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(stage.regions)))) as ex:
        futures = {r: ex.submit(one, r) for r in stage.regions}
        for r, f in futures.items():
            dep.ks[r] = f.result()


def _openstack(name: str) -> Callable[[Deployment, TrialPlan, lc.Stage, Say], None]:
    def stage_fn(dep: Deployment, p: TrialPlan, stage: lc.Stage, say: Say) -> None:
        c = dep.cloud
        c.admin_password, c.keystone, c.db = ADMIN_PASSWORD, dep.ks, dep.db
        cloud.STAGES[name](dep.svc, c, p, stage, say)

    stage_fn.__name__ = name.replace("-", "_")
    return stage_fn


SERVICES: dict[str, Callable[[Deployment, TrialPlan, lc.Stage, Say], None]] = {
    "database": database,
    "keystone": keystone,
    **{name: _openstack(name) for name in cloud.STAGES},
}


def bring_up(dep: Deployment, p: TrialPlan, stage: lc.Stage, retry: bool, logs: Path, say: Say) -> None:
    """``stage``'s services up on ``dep`` (already up on a shared deployment: nothing to do); ``retry``: what its
    failed try started is stopped first. A failure keeps the services' log tails in ``logs`` and raises."""
    if stage.name in dep.up and not retry:
        return
    for s in dep.by_stage.pop(stage.name, []):
        dep.svc.stop(s)
    before = list(dep.svc.started)
    try:
        SERVICES[stage.service](dep, p, stage, say)
    except BaseException:
        kept = keep_tails(dep.svc.run_dir, logs)
        if kept:
            say("Provisioning", f"the failed stage's service logs: {kept}")
        raise
    finally:
        dep.by_stage[stage.name] = [s for s in dep.svc.started if s not in before]
    dep.up.add(stage.name)


__all__ = ["ADMIN_PASSWORD", "DB_PASSWORD", "ROOT_PASSWORD", "SERVICES", "bring_up", "database", "keystone", "place"]
