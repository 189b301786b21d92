"""Plan one trial: resolved regions, links, database layout, load and faults. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wanwide import DEFAULT_IMAGE
from wanwide.core.api import limits
from wanwide.core.api.benchmark import Benchmark, BenchmarkSpec, Scenario, Slo
from wanwide.core.api.openstack import OpenStack
from wanwide.core.api.scenarios import FIX, KEYSTONE_SCENARIOS, NOT_DEPLOYED, needs, resolve
from wanwide.core.api.topology import Link, Network, TopologySpec
from wanwide.core.plan import latency, names
from wanwide.core.plan import topology as topo
from wanwide.core.plan.controlplane import ControlPlane, control_plane
from wanwide.core.plan.errors import Problem, Problems
from wanwide.core.plan.faults import FaultWindow, longest_cut_s, timeline
from wanwide.core.plan.links import LinkMap
from wanwide.core.plan.matrix import Point, expand
from wanwide.core.plan.monitoring import MonitoringConfig, monitoring_config
from wanwide.core.plan.services import (
    DatabaseConfig,
    KeystoneConfig,
    database_config,
    keystone_config,
)


@dataclass(frozen=True)
class ResolvedScenario:
    name: str
    args: dict[str, Any]
    times: int
    concurrency: int
    users: tuple[int, int] | None
    slo: Slo = field(default_factory=Slo)  # the scenario's, else the workload's, else no failed iteration


@dataclass(frozen=True)
class TrialPlan:
    """Everything one trial will deploy and do, before rendering to objects."""

    benchmark: str
    bench_namespace: str
    index: int
    repetition: int
    parameters: dict[str, str]
    regions: list[topo.ResolvedRegion]
    links: LinkMap
    classes: dict[str, list[latency.LinkClass]]
    backend: str
    primary_region: str
    load: str
    load_regions: list[str]
    scenarios: list[ResolvedScenario]
    max_rtt_ms: float
    database: DatabaseConfig
    keystone: KeystoneConfig
    faults: list[FaultWindow]
    monitoring: MonitoringConfig
    spec: BenchmarkSpec = field(repr=False)
    spread_key: str = "kubernetes.io/hostname"  # the node label a replicated database spreads over
    position: int | None = None  # place in the Benchmark's run order (core/plan/matrix.py)
    seed: int | None = None  # seed of that order
    # the OpenStack services: planes, each region's processes, the links they use (core/plan/controlplane.py);
    # always set by plan_point (Keystone alone unless spec.openstack enables more)
    control_plane: ControlPlane | None = None

    @property
    def name(self) -> str:
        return names.trial_name(self.benchmark, self.index)

    @property
    def id(self) -> str:
        return names.trial_id(self.index)

    @property
    def region_names(self) -> list[str]:
        return [r.name for r in self.regions]

    @property
    def schema_region(self) -> str:
        """The region whose Keystone creates the schema (db_sync) before the others start."""
        return self.region_names[0]

    @property
    def runner_image(self) -> str:
        """The Rally Jobs' image: the spec's, else the operator's default (its own image, the chart's value)."""
        return self.spec.runner.image or DEFAULT_IMAGE

    def namespace(self, region: str) -> str:
        return names.namespace(self.bench_namespace, self.benchmark, self.index, region)

    @property
    def db_namespace(self) -> str:
        """Where the database lives: the primary region (mariadb) or a namespace of its own."""
        if self.backend == "mariadb":
            return self.namespace(self.primary_region)
        return names.db_namespace(self.bench_namespace, self.benchmark, self.index)

    @property
    def namespaces(self) -> list[str]:
        out = [self.namespace(r) for r in self.region_names]
        if self.backend != "mariadb":
            out.append(self.db_namespace)
        return out

    def labels(self, region: str | None = None, role: str | None = None) -> dict[str, str]:
        return names.labels(self.benchmark, self.index, region, role)

    def node_selector(self, region: str) -> dict[str, str] | None:
        """Where a region's pods go (None: anywhere)."""
        return next((r.node_selector for r in self.regions if r.name == region), None)


def _network_for(net: Network, point: Point) -> Network:
    def with_rtt(link: Link | None, rtt: object, loss: object = None) -> Link | None:
        if rtt is None and loss is None:
            return link
        base = link or Link()
        return base.model_copy(update={k: v for k, v in (("rtt", rtt), ("loss", loss)) if v is not None})

    return Network(
        default=with_rtt(net.default, point.get("rtt"), point.get("loss")) or net.default,
        intra_group=with_rtt(net.intra_group, point.get("intra_group_rtt")),
        inter_group=with_rtt(net.inter_group, point.get("inter_group_rtt")),
        overrides=net.overrides,
    )


def _scenarios(spec: BenchmarkSpec, point: Point, problems: Problems) -> list[ResolvedScenario]:
    wl = spec.workload
    chosen: list[Scenario]
    swept = point.get("scenario")
    if swept is not None:
        base = {s.name: s for s in wl.scenarios or []}
        chosen = [base.get(str(swept)) or Scenario(name=str(swept))]
    else:
        chosen = list(wl.scenarios or [])
    out = []
    for i, s in enumerate(chosen):
        d = resolve(s.name)
        path = (f"spec.matrix.scenario[{(spec.matrix.scenario or []).index(str(swept))}]" if swept is not None
                else f"spec.workload.scenarios[{i}].name")
        if (why := service_problem(s.name, spec.openstack)) is not None:
            problems.add(path, why)
            continue
        if d is None and "." not in s.name:
            problems.add(
                path,
                f"unknown scenario {s.name!r}: use one of {', '.join(KEYSTONE_SCENARIOS)} "
                "or a full Rally name such as KeystoneBasic.create_and_list_users",
            )
            continue
        args = dict(d.args) if d else {}
        args.update(s.args or {})
        users = None
        if s.users is not None:
            users = (s.users.tenants, s.users.users_per_tenant)
        elif d and d.needs_users:
            users = (1, 1)
        out.append(
            ResolvedScenario(
                name=d.name if d else s.name,
                args=args,
                times=s.times or wl.times or (d.times if d else 10),
                concurrency=s.concurrency or wl.concurrency or (d.concurrency if d else 1),
                users=users,
                slo=s.slo or wl.slo or Slo(),
            )
        )
    return out


_NAMES = {"nova": "Nova", "placement": "Placement", "glance": "Glance", "neutron": "Neutron",
          "messaging": "the message bus", **NOT_DEPLOYED}


def service_problem(name: str, openstack: OpenStack) -> str | None:
    """Why the Rally scenario ``name`` cannot run on what ``spec.openstack`` deploys, with the fix; None when it
    can (core/api/scenarios.py ``needs``)."""
    wanted = needs(name)
    gone = [s for s in wanted if s in NOT_DEPLOYED]
    if gone:
        return (f"{name} needs {' and '.join(_NAMES[s] for s in gone)}, which wanwide does not deploy: use a "
                "Keystone, Nova, Glance or Neutron scenario")
    off = [s for s in wanted if not openstack.enabled(s)]
    if off:
        return (f"{name} needs {' and '.join(_NAMES[s] for s in off)}: "
                + "; ".join(FIX.get(s, f"enable spec.openstack.{s}") for s in off))
    return None


def _parameters(spec: BenchmarkSpec, point: Point, n_regions: int, net: Network) -> dict[str, str]:
    p = {
        "backend": str(point.get("backend", spec.database.backend)),
        "regions": str(n_regions),
        "load": str(point.get("load", spec.workload.load)),
        "rtt": net.default.rtt or "0ms",
        "loss": net.default.loss or "0%",
    }
    if net.intra_group is not None and net.intra_group.rtt:
        p["intraGroupRtt"] = net.intra_group.rtt
    if net.inter_group is not None and net.inter_group.rtt:
        p["interGroupRtt"] = net.inter_group.rtt
    if point.get("load_region") is not None:
        p["loadRegion"] = str(point.get("load_region"))
    if point.get("scenario") is not None:
        p["scenario"] = str(point.get("scenario"))
    p["repetition"] = str(point.repetition)
    return p


def _check_regions(field_name: str, wanted: list[str] | None, have: set[str], problems: Problems) -> None:
    for j, r in enumerate(wanted or []):
        if r not in have:
            problems.add(f"{field_name}[{j}]", f"unknown region {r!r}: use one of {', '.join(sorted(have))}")


def topology_place(bench: Benchmark) -> tuple[str, str]:
    """(object, path) of the Benchmark's topology as the user wrote it: inline in the Benchmark or a Topology."""
    if bench.spec.topology is not None:
        return "", "spec.topology"
    return f"Topology/{bench.spec.topology_ref}", "spec"


def plan_point(bench: Benchmark, topology: TopologySpec, point: Point, problems: Problems) -> TrialPlan | None:
    """The plan of one matrix point, or None with problems recorded."""
    spec = bench.spec
    count = point.get("regions")
    tobj, tpath = topology_place(bench)
    rs = topo.regions(topology, int(count) if count is not None else None, problems)
    if not rs:
        if not problems.items:
            problems.add(f"{tpath}.regions", "the topology has no regions: add some", tobj)
        return None
    names_set = {r.name for r in rs}
    if len(names_set) != len(rs):
        problems.add(f"{tpath}.regions", "region names must be unique: rename the duplicate", tobj)
        return None
    net = _network_for(topology.network, point)
    topo.check_network(net, names_set, problems, f"{tpath}.network", tobj)
    backend = str(point.get("backend", spec.database.backend))
    load = str(point.get("load", spec.workload.load))
    region_names = [r.name for r in rs]

    if backend == "galera" and len(rs) < 3 and not spec.database.galera.allow_fewer_than_three:
        problems.add(
            "spec.database.backend",
            f"galera needs at least 3 regions for quorum, this trial has {len(rs)}: add regions, "
            "or set spec.database.galera.allowFewerThanThree: true",
        )
    if backend == "cockroachdb" and len(rs) < 3:
        problems.add("spec.database.backend",
                     f"cockroachdb needs at least 3 regions (cockroach-operator v1alpha1 needs ≥3 nodes), this trial has {len(rs)}: add regions or use mariadb")
    if backend == "galera" and len(rs) < 2:
        problems.add("spec.database.backend", "galera needs at least 2 regions: use backend mariadb for one region")
    primary = spec.database.primary_region or region_names[0]
    if primary not in names_set:
        problems.add(
            "spec.database.primaryRegion",
            f"unknown region {primary!r}: use one of {', '.join(region_names)}",
        )
    swept_lr = point.get("load_region")
    if load == "light":
        lr = str(swept_lr or spec.workload.load_region or region_names[0])
        if lr not in names_set:
            problems.add(
                "spec.matrix.loadRegion" if swept_lr else "spec.workload.loadRegion",
                f"unknown region {lr!r} for light load: use one of {', '.join(region_names)}",
            )
        load_regions = [lr]
    else:
        if swept_lr is not None:
            problems.add("spec.matrix.loadRegion", "where light load runs: with load high every region runs Rally; "
                         "sweep loadRegion in a Benchmark whose load is light")
        load_regions = list(region_names)
    for i, p in enumerate(spec.faults.partitions):
        _check_regions(f"spec.faults.partitions[{i}].regions", p.regions, names_set, problems)
        if set(p.regions) >= names_set:
            problems.add(f"spec.faults.partitions[{i}].regions", "a partition must leave at least one region on the other side")
    for i, d in enumerate(spec.faults.dropouts):
        _check_regions(f"spec.faults.dropouts[{i}].regions", d.regions, names_set, problems)
    for i, w in enumerate(spec.faults.loss_windows):
        _check_regions(f"spec.faults.lossWindows[{i}].regions", w.regions, names_set, problems)

    scenarios = _scenarios(spec, point, problems) if spec.workload.scenarios or point.get("scenario") else []
    cp = control_plane(spec, region_names, backend, primary, load_regions, problems)
    if problems.items:
        return None
    lm = topo.links(net, rs)
    cls = latency.classes(lm, region_names)
    # Multi-member databases live in their own namespace: every class then targets
    # two kinds of pods (region namespaces, database members), two rules per class.
    latency.check_rule_budget(cls, 1 if backend == "mariadb" else 2, problems, f"{tpath}.network", tobj)
    if problems.items:
        return None
    max_rtt = max((v.delay_ms + lm[(b, a)].delay_ms for (a, b), v in lm.items()), default=0.0)
    faults = timeline(spec.faults, region_names, primary, lm)
    return TrialPlan(
        benchmark=bench.metadata.name,
        bench_namespace=bench.metadata.namespace,
        index=point.index,
        repetition=point.repetition,
        parameters=_parameters(spec, point, len(rs), net),
        regions=rs,
        links=lm,
        classes=cls,
        backend=backend,
        primary_region=primary,
        load=load,
        load_regions=load_regions,
        scenarios=scenarios,
        max_rtt_ms=max_rtt,
        database=database_config(spec, backend, max_rtt, longest_cut_s(faults), members=len(rs)),
        keystone=keystone_config(spec),
        faults=faults,
        monitoring=monitoring_config(spec),
        spec=spec,
        spread_key=topo.spread_key(topology),
        position=point.position,
        seed=point.seed,
        control_plane=cp,
    )


def topology_regions(topology: TopologySpec) -> int:
    """How many regions the topology has before any matrix resizes it."""
    return topology.generate.count if topology.generate is not None else len(topology.regions or [])


def size_problems(bench: Benchmark, topology: TopologySpec) -> list[tuple[str, str]]:
    """(path, problem) where the Benchmark asks for more than one may (core/api/limits.py): trials, their
    regions and shaped links, fault windows after the load's end, dropouts cutting too often. Counted from
    the spec alone, before any trial is expanded."""
    return (limits.budget_problems(limits.budget(bench.spec, topology_regions(topology)))
            + limits.fault_problems(bench.spec))


def plan(bench: Benchmark, topology: TopologySpec) -> list[TrialPlan]:
    """Every trial of a Benchmark; raises PlanError listing every problem, producing nothing partial."""
    name = bench.metadata.name
    where = f"Benchmark/{names.shown(name)[1:-1] if not name.isprintable() or len(name) > 80 else name}"
    problems = Problems()
    if (why := names.benchmark_name_problem(bench.metadata.name)) is not None:
        problems.add("metadata.name", why, where)
    if bench.spec.topology is not None and bench.spec.topology_ref is not None:
        problems.add("spec", "set exactly one of spec.topologyRef or spec.topology", where)
    if topology.regions is not None and topology.generate is not None:
        tobj, tpath = topology_place(bench)
        problems.add(tpath, "set exactly one of regions or generate", tobj or where)
    for path, why in size_problems(bench, topology):
        problems.add(path, why, where)
    if problems.items:  # nothing is expanded or planned beyond the caps
        problems.raise_if_any()
    plans: list[TrialPlan] = []
    seen_problem_sets: set[str] = set()
    for point in expand(bench.spec, bench.metadata.name):
        local = Problems()
        p = plan_point(bench, topology, point, local)
        for pr in local.items:
            key = str(pr)
            if key not in seen_problem_sets:
                seen_problem_sets.add(key)
                trial = f" (trial t{point.index:03d}: {', '.join(f'{k}={v}' for k, v in point.values.items())})" if point.values else ""
                problems.items.append(Problem(pr.field, pr.message + trial, pr.obj or where))
        if p is not None:
            plans.append(p)
        elif not local.items:  # never silently fewer trials
            problems.add("spec.matrix", f"trial t{point.index:03d} cannot be planned", where)
    problems.raise_if_any()
    return plans


__all__ = ["TrialPlan", "ResolvedScenario", "plan", "plan_point", "service_problem", "size_problems", "topology_regions"]
