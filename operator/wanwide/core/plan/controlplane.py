"""Where a trial's OpenStack services run: the control planes, each region's processes, the links they use. Pure.

``spec.openstack`` says which services a trial deploys and in which shape (core/api/openstack.py); this module
resolves it against the trial's regions into a :class:`ControlPlane` (``TrialPlan.control_plane``):

- the **planes**: shape ``regions``: one per region, each serving its own region; shape ``stretched``: one,
  serving every region, its services in ``controlRegion`` unless a service's ``region`` moves it;
- each region's **processes** (:class:`Process`: a role such as ``nova-conductor``, how many, its plane):
  what a provider starts there — pods of a chart, processes in the lab;
- the **links** (:class:`Link`): which process talks to which, in which region, over what (``sql``,
  ``amqp``, ``http``). The network check measures every pair of regions a link crosses
  (core/lifecycle/network.py ``probe_pairs``);
- where each service's **databases** are (:class:`DatabaseAt`): ``local``, a MariaDB of the control plane's
  own (role ``openstack-db``) beside the service; ``shared``, the trial's database (spec.database), as Keystone.

Keystone is always there: one in every region (``keystone-api``), its database the trial's. Each plane registers
its endpoints in the catalog under the name of every region it serves (``Plane.regions``: a load region's Rally
and its computes find their plane's Nova, Glance, Placement and Neutron under their own region), runs one cell
(cell1, and cell0) and names its fake computes :func:`compute_hosts`. Addresses, ports and how a process is
started stay the provider's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wanwide.core.api.benchmark import BenchmarkSpec
from wanwide.core.api.openstack import COMPUTES_PER_TRIAL_MAX
from wanwide.core.plan.errors import Problems
from wanwide.core.plan.links import Pair

# ---- the roles of processes --------------------------------------------------------------------------------
KEYSTONE_API = "keystone-api"
NOVA_API = "nova-api"
NOVA_CONDUCTOR = "nova-conductor"
NOVA_SCHEDULER = "nova-scheduler"
NOVA_COMPUTE = "nova-compute"  # one fake compute node (nova's fake virt driver) each
PLACEMENT_API = "placement-api"
GLANCE_API = "glance-api"
BUS = "rabbitmq"
NEUTRON_SERVER = "neutron-server"
OPENSTACK_DB = "openstack-db"  # a MariaDB of a control plane's own (database: local)
DATABASE = "database"  # the trial's database (spec.database): where Keystone's schema is
RALLY = "rally"  # the load region's runner

SERVICES = ("nova", "placement", "glance", "messaging", "neutron")
"""The services of spec.openstack besides Keystone, in the order they are brought up (core/lifecycle/deploy.py)."""
ROLE_OF = {"placement": PLACEMENT_API, "glance": GLANCE_API, "messaging": BUS, "neutron": NEUTRON_SERVER}
SCHEMAS = {"nova": ("nova_api", "nova_cell0", "nova"), "placement": ("placement",), "glance": ("glance",),
           "neutron": ("neutron",)}
"""The databases each service's schema owner creates (``db sync``)."""

SQL, AMQP, HTTP = "sql", "amqp", "http"


@dataclass(frozen=True)
class Process:
    """``count`` processes of ``role`` in a region, belonging to control plane ``plane`` (for ``nova-compute``:
    fake compute nodes, each a nova-compute service with a host name of its own: :func:`compute_hosts`)."""

    role: str
    service: str  # keystone, nova, placement, glance, messaging, neutron, or database (openstack-db)
    count: int
    plane: str


@dataclass(frozen=True)
class Link:
    """``src`` in ``src_region`` talks to ``dst`` in ``dst_region`` over ``protocol`` (sql, amqp, http)."""

    src: str
    src_region: str
    dst: str
    dst_region: str
    protocol: str

    @property
    def pair(self) -> Pair:
        return self.src_region, self.dst_region

    @property
    def wan(self) -> bool:
        """Whether it crosses the WAN (two regions)."""
        return self.src_region != self.dst_region


@dataclass(frozen=True)
class DatabaseAt:
    """Where one service of one plane keeps its schemas."""

    place: str  # local | shared
    region: str  # local: the region of the plane's openstack-db; shared: where the trial's database answers it
    schemas: tuple[str, ...]  # the database names (suffixed with the plane when planes share one database)


@dataclass(frozen=True)
class Plane:
    """One control plane: the regions it serves, the region each of its services runs in, its databases."""

    name: str  # shape regions: the region; stretched: the control region
    regions: tuple[str, ...]  # the regions it serves: their load regions' Rally and their computes use it
    where: Mapping[str, str]  # service (nova, placement, glance, messaging, neutron) → the region it runs in
    databases: Mapping[str, DatabaseAt]  # service with a database → where it is
    computes: Mapping[str, int]  # region → fake compute nodes there


NOVA_SECTIONS: dict[str, dict[str, Any]] = {
    "DEFAULT": {"compute_driver": "fake.FakeDriver", "heal_instance_info_cache_interval": -1},
    "quota": {"instances": -1, "cores": -1, "ram": -1},
    "scheduler": {"discover_hosts_in_cells_interval": 10},
    "oslo_messaging_notifications": {"driver": "noop"},
}
"""nova.conf as every Nova process runs it, but for addresses (transport_url, [database], [api_database],
[placement], [glance], [keystone_authtoken]: the provider's). Fake computes (no hypervisor); no quota (Rally's
tenants boot at its concurrency); no periodic refresh of a server's ports (no Neutron to ask, and no traffic
the load does not make); the scheduler finds new computes within 10 s (no discover_hosts to run)."""


@dataclass(frozen=True)
class ControlPlane:
    """Every OpenStack service of a trial: where it runs, how many processes, the links between them."""

    shape: str  # regions | stretched
    control_region: str | None  # stretched: the control plane's region
    services: tuple[str, ...]  # the enabled services besides Keystone (SERVICES order)
    planes: tuple[Plane, ...]
    processes: Mapping[str, tuple[Process, ...]]  # region → what runs there (every region: keystone-api at least)
    links: tuple[Link, ...]
    nova_sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    messaging_file_descriptors: int | None = None  # the broker's open-file limit (None: the platform's)

    def enabled(self, service: str) -> bool:
        return service == "keystone" or service in self.services

    def plane_of(self, region: str) -> Plane:
        """The control plane serving ``region`` (its computes, its load region's Rally)."""
        return next(p for p in self.planes if region in p.regions)

    def processes_in(self, region: str) -> tuple[Process, ...]:
        return self.processes.get(region, ())

    def count(self, region: str, role: str) -> int:
        return sum(p.count for p in self.processes_in(region) if p.role == role)

    def regions_of(self, role: str) -> list[str]:
        """The regions where ``role`` runs, in the plan's order."""
        return [r for r, ps in self.processes.items() if any(p.role == role for p in ps)]

    def wan_pairs(self) -> list[Pair]:
        """Every (source, destination) pair of regions a link crosses, each once, in the links' order."""
        return list(dict.fromkeys(lk.pair for lk in self.links if lk.wan))

    def summary(self) -> dict[str, Any]:
        """The control plane as plain data (the plan's golden files, ``wanwide plan``'s comments)."""
        return {
            "shape": self.shape, "controlRegion": self.control_region, "services": list(self.services),
            "planes": [{"name": p.name, "regions": list(p.regions), "where": dict(p.where),
                        "databases": {s: {"place": d.place, "region": d.region, "schemas": list(d.schemas)}
                                      for s, d in p.databases.items()},
                        "computes": dict(p.computes)} for p in self.planes],
            "processes": {r: [f"{p.role} ×{p.count} ({p.plane})" for p in ps] for r, ps in self.processes.items()},
            "links": [f"{lk.src}@{lk.src_region} → {lk.dst}@{lk.dst_region} {lk.protocol}" for lk in self.links],
            "wanPairs": [f"{a} → {b}" for a, b in self.wan_pairs()],
        }


def describe(cp: ControlPlane) -> list[str]:
    """The control plane in a few lines (``wanwide plan``'s comments): each region's processes, each pair of
    regions a link crosses and what crosses it. Nothing for Keystone alone."""
    if not cp.services:
        return []
    where = f" in {cp.control_region}" if cp.control_region else ""
    out = [f"control plane: shape {cp.shape}{where}: {', '.join(cp.services)}"]
    for r, ps in cp.processes.items():
        out.append(f"  {r}: " + ", ".join(f"{p.role} ×{p.count}" for p in ps))
    for a, b in cp.wan_pairs():
        what = sorted({f"{lk.src}→{lk.dst} {lk.protocol}" for lk in cp.links if lk.pair == (a, b)})
        out.append(f"  across the WAN {a} → {b}: {', '.join(what)}")
    return out


def compute_hosts(region: str, count: int) -> list[str]:
    """The host names of a region's fake compute nodes: ``<region>-c001``… (unique in the trial, at most 25
    characters: a region name is at most 20)."""
    return [f"{region}-c{i + 1:03d}" for i in range(count)]


def _database_region(backend: str, primary: str, region: str) -> str:
    """Where the trial's database answers a process in ``region``: the central MariaDB, else its member there."""
    return primary if backend == "mariadb" else region


def _check_region(path: str, region: str | None, names: Sequence[str], problems: Problems) -> None:
    if region is not None and region not in names:
        problems.add(path, f"unknown region {region!r}: use one of {', '.join(names)}")


def control_plane(spec: BenchmarkSpec, names: Sequence[str], backend: str, primary: str,
                  load_regions: Sequence[str], problems: Problems) -> ControlPlane | None:
    """The trial's control plane, or None with problems recorded (an unknown region, too many computes)."""
    os_ = spec.openstack
    services = tuple(s for s in SERVICES if os_.enabled(s))
    nova = os_.nova
    stretched = os_.shape == "stretched"
    control = (os_.control_region or primary) if stretched else None
    _check_region("spec.openstack.controlRegion", os_.control_region, names, problems)
    for s in SERVICES:
        _check_region(f"spec.openstack.{s}.region", getattr(os_, s).region, names, problems)
    compute_regions: list[str] = []
    if "nova" in services:
        for i, r in enumerate(nova.compute_regions or []):
            _check_region(f"spec.openstack.nova.computeRegions[{i}]", r, names, problems)
        if nova.compute_regions is not None and len(set(nova.compute_regions)) != len(nova.compute_regions):
            problems.add("spec.openstack.nova.computeRegions", "a region is listed twice: list each once")
        compute_regions = list(dict.fromkeys(nova.compute_regions)) if nova.compute_regions is not None \
            else list(names)
        total = nova.computes * len(compute_regions)
        if total > COMPUTES_PER_TRIAL_MAX:
            problems.add("spec.openstack.nova.computes",
                         f"{nova.computes} fake computes in each of {len(compute_regions)} regions is {total:,}, "
                         f"more than {COMPUTES_PER_TRIAL_MAX:,} in a trial: lower computes or list fewer "
                         "computeRegions")
    if backend == "cockroachdb":  # nothing renders the services' schemas on CockroachDB (only Keystone's)
        for s in services:
            if s in SCHEMAS and getattr(os_, s).database == "shared":
                problems.add(f"spec.openstack.{s}.database", f"{s}'s schemas are not rendered on CockroachDB: set "
                             "database: local (a MariaDB of its control plane's own) or spec.database.backend "
                             "mariadb or galera")
    if problems.items:
        return None

    def db(service: str, plane: str, at: str, shared_planes: int) -> DatabaseAt:
        place = getattr(os_, service).database
        schemas = SCHEMAS[service]
        if place == "local":
            return DatabaseAt("local", at, schemas)
        suffix = f"_{plane.replace('-', '_')}" if shared_planes > 1 else ""
        return DatabaseAt("shared", _database_region(backend, primary, at), tuple(s + suffix for s in schemas))

    with_db = [s for s in services if s in SCHEMAS]
    if stretched:
        assert control is not None
        where = {s: getattr(os_, s).region or control for s in services}
        planes = [Plane(control, tuple(names), where, {s: db(s, control, where[s], 1) for s in with_db},
                        {r: nova.computes for r in compute_regions})]
    else:
        planes = [Plane(r, (r,), dict.fromkeys(services, r), {s: db(s, r, r, len(names)) for s in with_db},
                        {r: nova.computes} if r in compute_regions else {}) for r in names]

    procs: dict[str, list[Process]] = {r: [Process(KEYSTONE_API, "keystone", os_.keystone.replicas, r)] for r in names}
    for p in planes:
        if "nova" in services:
            at = p.where["nova"]
            procs[at] += [Process(NOVA_API, "nova", nova.api.replicas, p.name),
                          Process(NOVA_CONDUCTOR, "nova", nova.conductor.replicas, p.name),
                          Process(NOVA_SCHEDULER, "nova", nova.scheduler.replicas, p.name)]
        for s in ("placement", "glance", "messaging", "neutron"):
            if s in services:
                procs[p.where[s]].append(Process(ROLE_OF[s], s, getattr(os_, s).replicas, p.name))
        for r in dict.fromkeys(d.region for d in p.databases.values() if d.place == "local"):
            procs[r].append(Process(OPENSTACK_DB, "database", 1, p.name))
        for r, n in p.computes.items():
            if n:
                procs[r].append(Process(NOVA_COMPUTE, "nova", n, p.name))

    links = _links(services, planes, names, backend, primary, load_regions)
    return ControlPlane(
        shape=os_.shape, control_region=control, services=services, planes=tuple(planes),
        processes={r: tuple(ps) for r, ps in procs.items()}, links=tuple(links),
        nova_sections={k: dict(v) for k, v in NOVA_SECTIONS.items()} if "nova" in services else {},
        messaging_file_descriptors=os_.messaging.file_descriptors if "messaging" in services else None)


def _links(services: tuple[str, ...], planes: Sequence[Plane], names: Sequence[str], backend: str, primary: str,
           load_regions: Sequence[str]) -> list[Link]:
    out: list[Link] = []

    def add(src: str, src_region: str, dst: str, dst_region: str, protocol: str) -> None:
        out.append(Link(src, src_region, dst, dst_region, protocol))

    for r in names:
        add(KEYSTONE_API, r, DATABASE, _database_region(backend, primary, r), SQL)
    for p in planes:
        w = p.where

        def to_db(src: str, src_region: str, service: str, plane: Plane = p) -> None:
            d = plane.databases[service]
            add(src, src_region, OPENSTACK_DB if d.place == "local" else DATABASE, d.region, SQL)

        if "nova" in services:
            at = w["nova"]
            for role in (NOVA_API, NOVA_CONDUCTOR, NOVA_SCHEDULER):
                add(role, at, BUS, w["messaging"], AMQP)
                to_db(role, at, "nova")
                add(role, at, PLACEMENT_API, w["placement"], HTTP)
                add(role, at, KEYSTONE_API, at, HTTP)
            add(NOVA_API, at, GLANCE_API, w["glance"], HTTP)
            if "neutron" in services:
                add(NOVA_API, at, NEUTRON_SERVER, w["neutron"], HTTP)
            for c, n in p.computes.items():
                if not n:
                    continue
                add(NOVA_COMPUTE, c, BUS, w["messaging"], AMQP)
                add(NOVA_COMPUTE, c, PLACEMENT_API, w["placement"], HTTP)
                add(NOVA_COMPUTE, c, GLANCE_API, w["glance"], HTTP)
                add(NOVA_COMPUTE, c, KEYSTONE_API, c, HTTP)
                if "neutron" in services:
                    add(NOVA_COMPUTE, c, NEUTRON_SERVER, w["neutron"], HTTP)
        for s in ("placement", "glance", "neutron"):
            if s in services:
                to_db(ROLE_OF[s], w[s], s)
                add(ROLE_OF[s], w[s], KEYSTONE_API, w[s], HTTP)
        if "neutron" in services:
            add(NEUTRON_SERVER, w["neutron"], BUS, w["messaging"], AMQP)
            if "nova" in services:
                add(NEUTRON_SERVER, w["neutron"], NOVA_API, w["nova"], HTTP)
    for lr in load_regions:
        add(RALLY, lr, KEYSTONE_API, lr, HTTP)
        p = next(p for p in planes if lr in p.regions)
        for s, role in (("nova", NOVA_API), ("glance", GLANCE_API), ("neutron", NEUTRON_SERVER)):
            if s in services:
                add(RALLY, lr, role, p.where[s], HTTP)
    return list(dict.fromkeys(out))


__all__ = ["AMQP", "BUS", "DATABASE", "GLANCE_API", "HTTP", "KEYSTONE_API", "NEUTRON_SERVER", "NOVA_API",
           "NOVA_COMPUTE", "NOVA_CONDUCTOR", "NOVA_SCHEDULER", "NOVA_SECTIONS", "OPENSTACK_DB", "PLACEMENT_API", "RALLY",
           "SCHEMAS", "SERVICES", "SQL", "ControlPlane", "DatabaseAt", "Link", "Plane", "Process", "compute_hosts", "describe",
           "control_plane"]
