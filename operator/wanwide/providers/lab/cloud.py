"""The lab's OpenStack services beside Keystone, started: each control plane's MariaDB and RabbitMQ, Placement,
Glance, Neutron's server, Nova (API, conductor, scheduler, its cells) and the fake computes, as processes in the
region namespaces, registered in the trial's Keystone. One function per deployment stage (core/lifecycle/deploy.py
``service_stages``), named in :data:`wanwide.providers.lab.bringup.SERVICES`.

What runs where is the plan's (``TrialPlan.control_plane``); the files are :mod:`wanwide.providers.lab.openstack`'s.
Every process is a :class:`~wanwide.providers.lab.services.Service` in ``dep.svc.started`` (so a failed stage's are
stopped before it is tried again, and the deployment's clean-up stops them all); every command's output is kept in
the service's directory.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.core.lifecycle.deploy import Stage
from wanwide.core.plan import controlplane as ctl
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.lab import openstack as ost
from wanwide.providers.lab import paths, procs
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.services import Service, Services, render_ini

Say = Callable[..., None]


@dataclass
class Cloud:
    """What the OpenStack stages of one deployment brought up, for the stages after them."""

    admin_password: str = ""
    keystone: dict[str, Service] = field(default_factory=dict)  # region → its Keystone (the Deployment's)
    db: dict[str, Service] = field(default_factory=dict)  # region → the trial's database endpoint there
    osdb: dict[str, Service] = field(default_factory=dict)  # region → the control plane's own MariaDB there
    bus: dict[str, Service] = field(default_factory=dict)  # region → RabbitMQ there
    apis: dict[tuple[str, str], Service] = field(default_factory=dict)  # (plane, service) → its API process
    computes: dict[str, list[str]] = field(default_factory=dict)  # region → its fake computes' host names
    registered: dict[str, list[str]] = field(default_factory=dict)  # region → the computes Nova reported up
    lock: threading.Lock = field(default_factory=threading.Lock)  # Keystone registrations, one at a time

    def describe(self) -> dict[str, Any]:
        """For the bundle: where each API answered, each stage's timings, the computes Nova reported up."""
        return {"apis": {f"{svc} {plane}": {"region": s.region, "url": s.info.get("url"), "start_s": s.start_s,
                                            "timings": s.info.get("timings", {})}
                         for (plane, svc), s in sorted(self.apis.items())},
                "buses": {r: {"start_s": s.start_s} for r, s in sorted(self.bus.items())},
                "computes": {r: sorted(h) for r, h in self.registered.items()}}


# ------------------------------------------------------------------------------------------------ Keystone
def _http(method: str, url: str, body: dict[str, Any] | None = None, token: str | None = None,
          timeout: float = 60) -> tuple[int, dict[str, Any], dict[str, str]]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Accept": "application/json", **({"X-Auth-Token": token} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else {}), dict(r.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"text": raw[:500].decode(errors="replace")}
        return e.code, doc, dict(e.headers)
    except OSError as e:  # refused, reset, timed out: the service is not (or no longer) there
        raise LabError(f"{method} {url}: {e}") from e


def admin_token(keystone: str, password: str) -> str:
    """A token of Keystone's admin (project admin) from ``keystone`` (http://ADDRESS:5000)."""
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
    code, doc, headers = _http("POST", f"{keystone}/v3/auth/tokens", body)
    if code != 201:
        raise LabError(f"Keystone {keystone}: admin token refused ({code}): {doc}")
    return headers.get("X-Subject-Token") or headers["x-subject-token"]


def _one(keystone: str, token: str, kind: str, query: str, create: dict[str, Any]) -> str:
    """The id of the ``kind`` (users, projects, services…) ``query`` finds, made with ``create`` if none."""
    code, doc, _ = _http("GET", f"{keystone}/v3/{kind}?{query}", token=token)
    if code == 200 and doc.get(kind):
        return str(doc[kind][0]["id"])
    code, doc, _ = _http("POST", f"{keystone}/v3/{kind}", create, token=token)
    if code != 201:
        raise LabError(f"Keystone {keystone}: creating {kind} {create} answered {code}: {doc}")
    return str(next(iter(doc.values()))["id"])


def register(cloud: Cloud, keystone: str, service: str, user: str, entries: Iterable[tuple[str, str, str, str]]) -> None:
    """``service``'s user (admin and service roles in the service project) and its catalog entries (type, region,
    interface, url), each made once: the trial's Keystones share their database, and a region's stage may run
    beside another's (one registration at a time)."""
    with cloud.lock:
        token = admin_token(keystone, cloud.admin_password)
        project = _one(keystone, token, "projects", f"name={ost.SERVICE_PROJECT}",
                       {"project": {"name": ost.SERVICE_PROJECT, "domain_id": "default"}})
        uid = _one(keystone, token, "users", f"name={user}",
                   {"user": {"name": user, "domain_id": "default", "password": ost.SERVICE_PASSWORD}})
        for role in ost.SERVICE_ROLES:
            rid = _one(keystone, token, "roles", f"name={role}", {"role": {"name": role}})
            code, doc, _ = _http("PUT", f"{keystone}/v3/projects/{project}/users/{uid}/roles/{rid}", token=token)
            if code not in (200, 204):
                raise LabError(f"Keystone {keystone}: role {role} for {user} answered {code}: {doc}")
        sids: dict[str, str] = {}
        for kind, region, interface, url in entries:
            if kind not in sids:
                sids[kind] = _one(keystone, token, "services", f"type={kind}",
                                  {"service": {"type": kind, "name": service, "enabled": True}})
            _one(keystone, token, "endpoints", f"service_id={sids[kind]}&region_id={region}&interface={interface}",
                 {"endpoint": {"service_id": sids[kind], "region_id": region, "interface": interface, "url": url,
                               "enabled": True}})


# ------------------------------------------------------------------------------------------------ processes
def _where(svc: Services, cloud: Cloud, plane: ctl.Plane, region: str) -> ost.Where:
    ks = cloud.keystone[region]
    bus_at = plane.where.get("messaging")
    bus = ost.transport_url(svc.net.address(bus_at)) if bus_at and svc.net else ""
    memcached = tuple(f"{s.host}:{s.port}" for s in svc.started if s.kind == "memcached" and s.region == region)
    return ost.Where(region=region, address=ks.host, keystone=f"http://{ks.host}:{ks.port}", bus=bus,
                     memcached=memcached)


def _run(svc: Services, region: str, d: Path, argv: list[str], label: str, timeout: float = 900,
         ok: tuple[int, ...] = (0,)) -> float:
    """A management command in ``region`` (db sync, cell set-up), its output in ``d/LABEL.log``; seconds taken.
    ``ok``: the exit codes that mean done."""
    t0 = time.monotonic()
    r = procs.run(argv, netns=svc._ns(region), check=False, timeout=timeout)
    (d / f"{label}.log").write_text(r.stdout + r.stderr)
    if r.returncode not in ok:
        raise LabError(f"{label} in {region} failed ({r.returncode}):\n{procs.tail_text(r.stdout + r.stderr)}")
    return round(time.monotonic() - t0, 2)


def _start(svc: Services, kind: str, region: str, name: str, d: Path, argv: list[str], port: int,
           env: dict[str, str] | None = None, info: dict[str, Any] | None = None) -> Service:
    proc = svc._start(region, name, argv, d / f"{name}.log", env=env, cwd=d)
    s = Service(kind, region, name, svc._addr(region), port, d, proc, info=dict(info or {}))
    svc.started.append(s)
    return s


def _write(d: Path, name: str, sections: dict[str, dict[str, Any]]) -> Path:
    p = d / name
    p.write_text(render_ini(sections))
    return p


def _http_ready(s: Service, url: str, timeout: float, what: str) -> None:
    def ok() -> bool:
        code, _, _ = _http("GET", url, timeout=10)
        return code < 500

    t0 = time.monotonic()
    s.proc.wait_ready(ok, timeout, what)
    s.start_s = round(time.monotonic() - t0, 2)


def _gunicorn(svc: Services, service: str, region: str, plane: str, d: Path, workers: int) -> Service:
    """``service``'s API under gunicorn on the region's address (wanwide's WSGI module, its config directory)."""
    module = f"wanwide_{service}_wsgi"
    (d / f"{module}.py").write_text(ost.wsgi_module(service))
    addr, port = svc._addr(region), ost.PORTS[service]
    argv = [str(paths.openstack_bin("gunicorn")), "--bind", f"{addr}:{port}", "--workers", str(workers),
            "--timeout", "300", "--graceful-timeout", "5", "--chdir", str(d), "--control-socket",
            str(d / "gunicorn.ctl"), "--access-logfile", str(d / "access.log"), f"{module}:application"]
    env = {ost.CONFIG_DIR_ENV[service]: str(d)}
    if service == "neutron":
        env["OS_NEUTRON_CONFIG_FILES"] = ost.CONFIG_FILE[service]
    return _start(svc, f"{service}-api", region, f"{service}-api-{plane}", d, argv, port, env=env,
                  info={"url": ost.endpoint_url(service, addr), "workers": workers, "plane": plane})


def _paste(service: str, d: Path) -> None:
    if service in ost.PASTE:
        src = paths.openstack_etc(ost.PASTE[service])
        (d / Path(ost.PASTE[service]).name).write_text(src.read_text())


def _database(svc: Services, cloud: Cloud, plane: ctl.Plane, service: str) -> list[str]:
    """``service``'s databases for ``plane`` made (its user, all rights on them); their connection URLs."""
    at = plane.databases[service]
    db = cloud.osdb[at.region] if at.place == "local" else cloud.db[at.region]
    user = ost.DB_USER[service]
    out = []
    for name in at.schemas:
        svc.create_database(db, name, user, ost.DB_PASSWORD)
        out.append(ost.connection(user, ost.DB_PASSWORD, db.host, db.port, name))
    return out


def _planes(p: TrialPlan, stage: Stage, service: str) -> list[ctl.Plane]:
    cp = p.control_plane
    assert cp is not None
    return [pl for pl in cp.planes if pl.where.get(service) in stage.regions]


def _each(items: list[Any], fn: Callable[[Any], Any]) -> list[Any]:
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as ex:
        return list(ex.map(fn, items))


# ------------------------------------------------------------------------------------------------ stages
def openstack_db(svc: Services, cloud: Cloud, p: TrialPlan, stage: Stage, say: Say) -> None:
    """Each control plane's own MariaDB (``database: local``) in the regions of ``stage``."""
    cfg = p.database

    def one(r: str) -> None:
        cloud.osdb[r] = svc.start_mariadb(r, port=ost.PORTS["openstack-db"], name="openstack-db",
                                          in_memory=cfg.in_memory, server=cfg.server)
        say("Provisioning", f"openstack-db {r} up ({cloud.osdb[r].start_s:.0f}s)")

    _each(list(stage.regions), one)


def messaging(svc: Services, cloud: Cloud, p: TrialPlan, stage: Stage, say: Say, timeout: float = 180) -> None:
    """RabbitMQ (Debian's) in each region of ``stage``: one node, the services' user made at its first boot."""
    cp = p.control_plane
    assert cp is not None
    fds = cp.messaging_file_descriptors

    def one(r: str) -> None:
        t0 = time.monotonic()
        d = svc._dir(r, "rabbitmq")
        addr = svc._addr(r)
        (d / "rabbitmq.conf").write_text(ost.rabbitmq_conf(addr))
        (d / "enabled_plugins").write_text("[].\n")
        argv = [str(paths.RABBITMQ_SERVER)]
        if fds:
            argv = ["prlimit", f"--nofile={fds}:{fds}", "--", *argv]
        port = ost.PORTS["messaging"]
        s = _start(svc, "rabbitmq", r, f"rabbitmq-{r}", d, argv, port, env=ost.rabbitmq_env(d),
                   info={"url": ost.transport_url(addr).replace(ost.BUS_PASSWORD, "***"),
                         "file_descriptors": fds})
        s.proc.wait_ready(lambda: svc.tcp_open(r, addr, port), timeout, f"rabbitmq in {r} accepting AMQP")
        s.start_s = round(time.monotonic() - t0, 2)
        cloud.bus[r] = s
        say("Provisioning", f"rabbitmq {r} up ({s.start_s:.0f}s)")

    _each(list(stage.regions), one)


def api_service(service: str) -> Callable[[Services, Cloud, TrialPlan, Stage, Say], None]:
    """The stage of Placement, Glance or Neutron's server: per control plane whose ``service`` runs in the stage's
    regions, its databases, its configuration, ``db sync``, its user and catalog entries, then its API."""
    role = ctl.ROLE_OF[service]
    sync = {"placement": ("placement-manage", ["db", "sync"]), "glance": ("glance-manage", ["db_sync"]),
            "neutron": ("neutron-db-manage", ["upgrade", "heads"])}[service]

    def stage_fn(svc: Services, cloud: Cloud, p: TrialPlan, stage: Stage, say: Say, timeout: float = 300) -> None:
        cp = p.control_plane
        assert cp is not None

        def one(plane: ctl.Plane) -> None:
            t0 = time.monotonic()
            r = plane.where[service]
            d = svc._dir(r, f"{service}-{plane.name}" if plane.name != r else service)
            w = _where(svc, cloud, plane, r)
            (conn,) = _database(svc, cloud, plane, service)
            sections = {"placement": lambda: ost.placement_conf(w, conn), "glance": lambda: ost.glance_conf(w, conn, d),
                        "neutron": lambda: ost.neutron_conf(w, conn, d)}[service]()
            conf = _write(d, ost.CONFIG_FILE[service], sections)
            _paste(service, d)
            timings = {"db_sync": _run(svc, r, d, [str(paths.openstack_bin(sync[0])), "--config-file", str(conf),
                                                   *sync[1]], "db-sync")}
            register(cloud, w.keystone, service, ost.DB_USER[service],
                     ost.catalog(service, svc._addr(r), plane.regions))
            workers = next(pr.count for pr in cp.processes_in(r) if pr.role == role and pr.plane == plane.name)
            s = _gunicorn(svc, service, r, plane.name, d, workers)
            _http_ready(s, f"http://{s.host}:{s.port}/", timeout, f"{service} in {r} answering")
            s.info["timings"] = {**timings, "start": s.start_s}
            s.start_s = round(time.monotonic() - t0, 2)
            cloud.apis[(plane.name, service)] = s
            say("Provisioning", f"{service} {r} up, {workers} process(es) ({s.start_s:.0f}s)")

        _each(_planes(p, stage, service), one)

    return stage_fn


def _nova_conf(svc: Services, cloud: Cloud, p: TrialPlan, plane: ctl.Plane, region: str, d: Path,
               databases: tuple[str, str] | None) -> Path:
    cp = p.control_plane
    assert cp is not None
    workers = {"conductor": cp.count(region, ctl.NOVA_CONDUCTOR), "scheduler": cp.count(region, ctl.NOVA_SCHEDULER)}
    sections = ost.nova_conf(cp.nova_sections, _where(svc, cloud, plane, region), d, databases=databases,
                             workers={k: v for k, v in workers.items() if v and databases is not None},
                             neutron=cp.enabled("neutron"))
    (d / "state").mkdir(exist_ok=True)
    return _write(d, "nova.conf", sections)


def nova(svc: Services, cloud: Cloud, p: TrialPlan, stage: Stage, say: Say, timeout: float = 300) -> None:
    """Nova's API, conductor and scheduler of each control plane in the stage's regions: its databases, the cells
    (``api_db sync``, ``cell_v2 map_cell0``, ``cell_v2 create_cell``, ``db sync``), its user and catalog entries,
    then the processes; ready when the API answers and the conductor and scheduler report up."""
    cp = p.control_plane
    assert cp is not None
    manage = str(paths.openstack_bin("nova-manage"))

    def one(plane: ctl.Plane) -> None:
        t0 = time.monotonic()
        r = plane.where["nova"]
        d = svc._dir(r, f"nova-{plane.name}" if plane.name != r else "nova")
        api_db, cell0, main = _database(svc, cloud, plane, "nova")
        conf = _nova_conf(svc, cloud, p, plane, r, d, (api_db, main))
        _paste("nova", d)
        c = ["--config-file", str(conf)]
        timings = {"api_db_sync": _run(svc, r, d, [manage, *c, "api_db", "sync"], "api-db-sync"),
                   "map_cell0": _run(svc, r, d, [manage, *c, "cell_v2", "map_cell0", "--database_connection", cell0],
                                     "map-cell0"),
                   # 2: a cell with this bus and database exists (the stage tried again)
                   "create_cell": _run(svc, r, d, [manage, *c, "cell_v2", "create_cell", "--name", "cell1"],
                                       "create-cell", ok=(0, 2)),
                   "db_sync": _run(svc, r, d, [manage, *c, "db", "sync"], "db-sync")}
        w = _where(svc, cloud, plane, r)
        register(cloud, w.keystone, "nova", "nova", ost.catalog("nova", svc._addr(r), plane.regions))
        ctl_conf = _write(d, "control.conf", ost.control_conf(plane.name))
        for binary in ("nova-conductor", "nova-scheduler"):
            _start(svc, binary, r, f"{binary}-{plane.name}", d,
                   [str(paths.openstack_bin(binary)), *c, "--config-file", str(ctl_conf)], 0, info={"plane": plane.name})
        workers = cp.count(r, ctl.NOVA_API)
        api = _gunicorn(svc, "nova", r, plane.name, d, workers)
        _http_ready(api, f"http://{api.host}:{api.port}/", timeout, f"nova-api in {r} answering")
        token = admin_token(w.keystone, cloud.admin_password)
        host = ost.control_conf(plane.name)["DEFAULT"]["host"]
        up = wait_services(api, token, {"nova-conductor": [host], "nova-scheduler": [host]}, timeout)
        api.info["timings"] = {**timings, "start": api.start_s, "services": up}
        api.start_s = round(time.monotonic() - t0, 2)
        cloud.apis[(plane.name, "nova")] = api
        say("Provisioning", f"nova {r} up: api ×{workers}, conductor, scheduler ({api.start_s:.0f}s)")

    _each(_planes(p, stage, "nova"), one)


def services_up(api: Service, token: str) -> dict[str, set[str]]:
    """binary → the hosts whose service Nova reports up (``GET /os-services``)."""
    code, doc, _ = _http("GET", f"{api.info['url']}/os-services", token=token)
    if code != 200:
        raise LabError(f"{api.name}: GET /os-services answered {code}: {doc}")
    out: dict[str, set[str]] = {}
    for s in doc.get("services", []):
        if s.get("state") == "up" and s.get("status") == "enabled":
            out.setdefault(s["binary"], set()).add(s["host"])
    return out


def wait_services(api: Service, token: str, wanted: dict[str, list[str]], timeout: float) -> float:
    """Wait until Nova reports every host of ``wanted`` (binary → hosts) up; seconds waited."""
    t0 = time.monotonic()

    def missing() -> list[str]:
        up = services_up(api, token)
        return [f"{b} {h}" for b, hosts in wanted.items() for h in hosts if h not in up.get(b, set())]

    last: list[str] = []

    def done() -> bool:
        last[:] = missing()
        return not last

    try:
        procs.wait_for(done, timeout, f"{api.name}: {sum(map(len, wanted.values()))} service(s) up", api.log_path,
                       interval=2.0)
    except procs.ReadinessError as e:
        raise procs.ReadinessError(f"{e}\nnot up: {', '.join(last[:20])}") from None
    return round(time.monotonic() - t0, 2)


DISCOVER_TRIES = 5


def discover_hosts(svc: Services, region: str, d: Path, tries: int = DISCOVER_TRIES, pause_s: float = 2.0) -> None:
    """``nova-manage cell_v2 discover_hosts``, again when it collided with the scheduler's own periodic discovery
    (``discover_hosts_in_cells_interval``): both mapped one host at once and nova-manage stopped at the duplicate
    (exit 2, "Duplicate host mapping"; seen with 100 computes starting together). Another run maps the rest."""
    argv = [str(paths.openstack_bin("nova-manage")), "--config-file", str(d / "nova.conf"), "cell_v2", "discover_hosts"]
    for attempt in range(1, tries + 1):
        try:
            _run(svc, region, d, argv, f"discover-hosts-{int(time.time())}-{attempt}")
            return
        except LabError as e:
            if attempt == tries or "Duplicate host mapping" not in str(e):
                raise
            time.sleep(pause_s)


def nova_compute(svc: Services, cloud: Cloud, p: TrialPlan, stage: Stage, say: Say, timeout: float = 600) -> None:
    """The fake computes of every region of ``stage`` (each a nova-compute with its host name and state directory),
    started together; ready when their control plane's Nova reports each up, then mapped into its cell
    (``cell_v2 discover_hosts`` in the plane's region)."""
    cp = p.control_plane
    assert cp is not None
    t0 = time.monotonic()
    forget_computes(cloud, cp, stage.regions)
    by_plane: dict[str, list[str]] = {}
    for r in stage.regions:
        for pr in cp.processes_in(r):
            if pr.role != ctl.NOVA_COMPUTE or not pr.count:
                continue
            plane = next(pl for pl in cp.planes if pl.name == pr.plane)
            d = svc._dir(r, f"nova-compute-{plane.name}")
            conf = _nova_conf(svc, cloud, p, plane, r, d, None)
            hosts = ctl.compute_hosts(r, pr.count)
            for h in hosts:
                state = d / h
                state.mkdir(exist_ok=True)
                own = _write(d, f"{h}.conf", ost.compute_conf(h, state))
                _start(svc, "nova-compute", r, f"nova-compute-{h}", d,
                       [str(paths.openstack_bin("nova-compute")), "--config-file", str(conf), "--config-file",
                        str(own)], 0, info={"host": h, "plane": plane.name})
            cloud.computes.setdefault(r, []).extend(hosts)
            by_plane.setdefault(plane.name, []).extend(hosts)
    for plane_name, hosts in by_plane.items():
        api = cloud.apis[(plane_name, "nova")]
        plane = next(pl for pl in cp.planes if pl.name == plane_name)
        token = admin_token(_where(svc, cloud, plane, plane.where["nova"]).keystone, cloud.admin_password)
        wait_services(api, token, {"nova-compute": hosts}, timeout)
        up = services_up(api, token).get("nova-compute", set())
        mine = set(hosts)  # this plane's computes: in shape regions each region's Nova knows only its own
        for r in stage.regions:
            if any(h in mine for h in cloud.computes.get(r, [])):
                cloud.registered[r] = sorted(h for h in cloud.computes.get(r, []) if h in mine and h in up)
        discover_hosts(svc, plane.where["nova"], api.dir)
        say("Provisioning", f"{len(hosts)} fake compute(s) of {plane_name} up and mapped "
            f"({time.monotonic() - t0:.0f}s)")


def region_memory(regions: dict[str, str]) -> dict[str, dict[str, float]]:
    """region → the resident memory of every process in its network namespace (``regions``: region → namespace),
    in MiB: ``rss`` (each process's resident set, shared pages counted in each) and ``pss`` (shared pages divided
    among their users: what the region adds to the machine), with the number of processes."""
    out: dict[str, dict[str, float]] = {}
    for region, ns in regions.items():
        r = procs.run(["ip", "netns", "pids", ns], check=False, timeout=30)
        rss = pss = 0
        n = 0
        for pid in r.stdout.split():
            try:
                text = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            vals = {k: int(v.split()[0]) for k, _, v in (ln.partition(":") for ln in text.splitlines()[1:])
                    if k in ("Rss", "Pss")}
            rss, pss, n = rss + vals.get("Rss", 0), pss + vals.get("Pss", 0), n + 1
        out[region] = {"rss_mib": round(rss / 1024, 1), "pss_mib": round(pss / 1024, 1), "processes": n}
    return out


def forget_computes(cloud: Cloud, cp: ctl.ControlPlane, regions: Iterable[str]) -> None:
    """The service records of the computes of ``regions`` that an earlier try of their stage left, deleted (with
    their compute nodes and resource providers): nova's fake driver keeps no node identity, so a nova-compute whose
    record exists refuses to start ("No local node identity found, but this is not our first startup")."""
    hosts = {h for r in regions for pr in cp.processes_in(r) if pr.role == ctl.NOVA_COMPUTE
             for h in ctl.compute_hosts(r, pr.count)}
    for (plane, service), api in list(cloud.apis.items()):
        if service != "nova":
            continue
        pl = next(p for p in cp.planes if p.name == plane)
        token = admin_token(cloud.keystone[pl.where["nova"]].info["url"].removesuffix("/v3"), cloud.admin_password)
        code, doc, _ = _http("GET", f"{api.info['url']}/os-services?binary=nova-compute", token=token)
        if code != 200:
            raise LabError(f"{api.name}: GET /os-services answered {code}: {doc}")
        for s in doc.get("services", []):
            if s["host"] in hosts:
                _http("DELETE", f"{api.info['url']}/os-services/{s['id']}", token=token)
    for r in regions:
        cloud.computes.pop(r, None)
        cloud.registered.pop(r, None)


def hypervisors(api: Service, token: str) -> list[str]:
    """The hypervisors (fake compute nodes) Nova knows, by host name."""
    code, doc, _ = _http("GET", f"{api.info['url']}/os-hypervisors", token=token)
    if code != 200:
        raise LabError(f"{api.name}: GET /os-hypervisors answered {code}: {doc}")
    return sorted(h["hypervisor_hostname"] for h in doc.get("hypervisors", []))


STAGES: dict[str, Callable[[Services, Cloud, TrialPlan, Stage, Say], None]] = {
    "openstack-db": openstack_db,
    "messaging": messaging,
    "placement": api_service("placement"),
    "glance": api_service("glance"),
    "neutron": api_service("neutron"),
    "nova": nova,
    "nova-compute": nova_compute,
}
"""The deployment stages of spec.openstack's services beyond Keystone (core/lifecycle/deploy.py ``Stage.service``)."""


__all__ = ["STAGES", "Cloud", "admin_token", "hypervisors", "region_memory", "register", "services_up", "wait_services"]
