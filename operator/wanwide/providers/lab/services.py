"""Real services inside region namespaces: MariaDB, Galera, memcached, Keystone, S3.

Every service gets its own directory under the run dir, logs to files there,
is started through :class:`wanwide.providers.lab.procs.Managed` (so its pid is in the
lab state file) and is waited for with a timeout; a failure raises
:class:`~wanwide.providers.lab.procs.ReadinessError` with the tail of the service's log.

Typical use (``net`` from :func:`wanwide.providers.lab.netns.build`)::

    svc = Services(net, run_dir)
    db = svc.start_mariadb("r1", in_memory=True)
    svc.create_database(db, "keystone", "keystone", "secret")
    mc = svc.start_memcached("r1")
    ks = svc.start_keystone("r1", db_host=db.host, db_password="secret",
                            memcached=mc, admin_password="admin", db_sync=True)
    ks.url, ks.info["cache"]
    svc.stop_all()
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.core.plan.services import (
    KEYSTONE_DB,
    KEYSTONE_DB_CHARSET,
    KEYSTONE_DB_USER,
    KEYSTONE_SECTIONS,
    MEMCACHED_CONNECTIONS,
    MEMCACHED_MEMORY_MB,
    MEMCACHED_PORT,
    SERVER_OPTIONS,
    KeystoneConfig,
)
from wanwide.providers.lab import paths, procs
from wanwide.providers.lab.netns import Network
from wanwide.providers.lab.procs import LabError, ReadinessError

GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"


JOIN_BATCH = 8
"""Galera members that join at once (after the first): one view change for all of them."""


@dataclass
class Service:
    kind: str  # mariadb, galera, memcached, keystone, s3
    region: str | None
    name: str
    host: str
    port: int
    dir: Path
    proc: procs.Managed
    start_s: float = 0.0  # seconds from launch to ready
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def log_path(self) -> Path:
        return self.proc.log_path

    @property
    def url(self) -> str:
        return str(self.info.get("url", f"{self.host}:{self.port}"))

    def running(self) -> bool:
        return self.proc.running()


_INSTALL_LOCK = threading.Lock()  # mariadb-install-db, one at a time


class Services:
    """Starts and tracks the services of one lab run; :meth:`stop_all` undoes them."""

    def __init__(self, net: Network | None, run_dir: str | Path) -> None:
        self.net = net
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        _make_traversable(self.run_dir)
        self.started: list[Service] = []
        self._keys_dir: Path | None = None

    # ------------------------------------------------------------ helpers
    def _ns(self, region: str | None) -> str | None:
        if region is None or self.net is None:
            return None
        return self.net.netns(region)

    def _addr(self, region: str | None) -> str:
        if region is None or self.net is None:
            return "127.0.0.1"
        return self.net.address(region)

    def _dir(self, region: str | None, name: str) -> Path:
        d = self.run_dir / (f"{region}-{name}" if region else name)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def _start(self, region: str | None, name: str, argv: Sequence[str], log: Path,
               env: Mapping[str, str] | None = None, cwd: Path | None = None) -> procs.Managed:
        return procs.Managed.start_process(
            name, argv, log, netns=self._ns(region), env=env, cwd=cwd,
            state=self.net.state if self.net else None)

    def tcp_open(self, region: str | None, host: str, port: int, timeout: float = 1.0) -> bool:
        """Can ``host:port`` be connected to (from the host, through the host links)?"""
        if self.net is not None and region is not None and not self.net.host_links:
            r = self.net.exec_in(region, ["bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"],
                                 check=False, timeout=timeout + 5)
            return r.returncode == 0
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout):
            return True
        return False

    def stop(self, svc: Service, grace: float = 15.0) -> None:
        svc.proc.stop(grace=grace, state=self.net.state if self.net else None)
        with contextlib.suppress(ValueError):
            self.started.remove(svc)

    def stop_all(self) -> None:
        """Every service at once (one by one, a 45-member Galera took ~10 s a member: each leaving is a view
        change of the rest)."""
        svcs = list(reversed(self.started))
        if svcs:
            with ThreadPoolExecutor(max_workers=min(64, len(svcs))) as ex:
                list(ex.map(self.stop, svcs))

    # ------------------------------------------------------------ MariaDB / Galera
    def _mariadb_dirs(self, region: str | None, name: str, in_memory: bool) -> tuple[Path, Path]:
        d = self._dir(region, name)
        if in_memory:
            tag = self.net.tag if self.net else str(os.getpid())
            data = Path("/dev/shm") / f"ww-{tag}-{region or 'host'}-{name}"
            if self.net:
                self.net.state.add_dir(data)
        else:
            data = d / "data"
        data.mkdir(parents=True, exist_ok=True)
        # As root the rsync state transfer fails: everything mysql-owned.
        shutil.chown(d, "mysql", "mysql")
        subprocess.run(["chown", "-R", "mysql:mysql", str(data)], check=True)
        return d, data

    def _write_cnf(self, d: Path, cnf: Mapping[str, Any]) -> Path:
        path = d / "my.cnf"
        path.write_text(render_cnf(cnf))
        shutil.chown(path, "mysql", "mysql")
        return path

    def _install_db(self, d: Path, data: Path) -> None:
        """The system tables, unless the data directory has them (a restarted member, a joiner after its state
        transfer). A failed install empties the directory: what it left (a ``mysql/`` of half-written tables) would
        pass for an install, and mariadbd then refuses InnoDB on it ("wrong space ID"), so every retry of the stage
        failed (2026-11-30). One install at a time: three at once in one stage is how that one failed."""
        if (data / "mysql").is_dir():
            return
        try:
            with _INSTALL_LOCK:
                r = procs.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=mysql",
                               "--skip-test-db", "--auth-root-authentication-method=socket"],
                              check=False, timeout=120)
            (d / "install-db.log").write_text(r.stdout + r.stderr)
            if r.returncode != 0:
                raise LabError(f"mariadb-install-db failed in {data}:\n{procs.tail_text(r.stdout + r.stderr)}")
        except BaseException:  # failed or timed out: nothing half-written may pass for an install
            for child in data.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            raise

    def sql(self, db: Service, statement: str, timeout: float = 60) -> str:
        """Run SQL as root through the server's unix socket; returns tab-separated output."""
        r = procs.run(["mariadb", "--no-defaults", "-S", str(db.dir / "mysqld.sock"), "-uroot",
                       "-N", "-B", "-e", statement], check=False, timeout=timeout)
        if r.returncode != 0:
            raise LabError(f"SQL on {db.name} failed: {statement[:200]}\n{r.stderr.strip()}")
        return r.stdout

    def status(self, db: Service, like: str) -> dict[str, str]:
        out = self.sql(db, f"SHOW GLOBAL STATUS LIKE '{like}'")
        return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)

    def _wait_sql(self, svc: Service, timeout: float) -> None:
        def ok() -> bool:
            self.sql(svc, "SELECT 1", timeout=10)
            return True

        svc.proc.wait_ready(ok, timeout, f"{svc.name} accepting SQL")

    def start_mariadb(self, region: str | None, *, port: int = 3306, in_memory: bool = False,
                      name: str = "mariadb", server: Mapping[str, str] = SERVER_OPTIONS,
                      timeout: float = 60) -> Service:
        """A single MariaDB server bound to the region's address, with the plan's ``server`` options."""
        t0 = time.monotonic()
        d, data = self._mariadb_dirs(region, name, in_memory)
        self._install_db(d, data)
        addr = self._addr(region)
        cnf = self._write_cnf(d, mariadb_cnf(d, data, addr, port, server))
        proc = self._start(region, name, ["mariadbd", f"--defaults-file={cnf}"], d / "mariadbd.log")
        svc = Service("mariadb", region, name, addr, port, d, proc,
                      info={"datadir": str(data), "in_memory": in_memory, "config": str(cnf)})
        self.started.append(svc)
        self._wait_sql(svc, timeout)
        svc.start_s = time.monotonic() - t0
        svc.info["error_log"] = str(d / "error.log")
        return svc

    def create_database(self, db: Service, database: str = KEYSTONE_DB, user: str = KEYSTONE_DB_USER,
                        password: str = "keystone") -> None:
        """Create ``database`` (the plan's character set) and ``user``@'%' with all rights on it (idempotent)."""
        charset, collation = KEYSTONE_DB_CHARSET
        self.sql(db, f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET {charset} COLLATE {collation}; "
                     f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{password}'; "
                     f"GRANT ALL PRIVILEGES ON `{database}`.* TO '{user}'@'%'; "
                     "FLUSH PRIVILEGES;")

    def start_galera(self, regions: Sequence[str], *, port: int = 3306, in_memory: bool = False,
                     provider_options: Mapping[str, str] | None = None,
                     server: Mapping[str, str] = SERVER_OPTIONS,
                     cluster_name: str | None = None, name: str = "galera",
                     timeout: float = 180, join_batch: int = JOIN_BATCH) -> list[Service]:
        """One Galera member per region; the first bootstraps, the others join ``join_batch`` at a time.

        The first member's state is copied to the others before they start (:meth:`_seed_from`), so a
        join needs no state transfer, only a view change every member takes part in: one per batch
        rather than one per member (at 45 members on 2 cores, joins one by one starved the cluster).
        Each batch is waited for until every member in it is ``Synced``; at the end every member must
        see the full cluster size. ``provider_options`` are evs/gmcast settings, e.g. from the plan's
        :attr:`wanwide.core.plan.services.DatabaseConfig.galera`.
        """
        if not regions:
            raise LabError("galera: no regions")
        members = [self._addr(r) for r in regions]
        gcomm = "gcomm://" + ",".join(f"{a}:4567" for a in members)
        cname = cluster_name or f"ww-{self.net.tag if self.net else os.getpid()}"
        out: list[Service] = []

        def start(i: int) -> tuple[Service, float]:
            t0 = time.monotonic()
            region, addr = regions[i], members[i]
            d, data = self._mariadb_dirs(region, name, in_memory)
            self._install_db(d, data)
            cnf_body = {**mariadb_cnf(d, data, addr, port, server),
                        **galera_cnf(addr, gcomm, cname, region, provider_options or {})}
            cnf = self._write_cnf(d, cnf_body)
            opts = galera_provider_string(addr, provider_options or {})
            argv = ["mariadbd", f"--defaults-file={cnf}"] + (["--wsrep-new-cluster"] if i == 0 else [])
            proc = self._start(region, f"{name}-{region}", argv, d / "mariadbd.log")
            svc = Service("galera", region, f"{name}-{region}", addr, port, d, proc,
                          info={"datadir": str(data), "in_memory": in_memory, "config": str(cnf),
                                "cluster_address": gcomm, "provider_options": _parse_options(opts),
                                "bootstrap": i == 0})
            self.started.append(svc)
            out.append(svc)
            return svc, t0

        def synced(svc: Service, t0: float) -> None:
            try:
                svc.proc.wait_ready(lambda: self.status(svc, "wsrep_local_state_comment").get(
                    "wsrep_local_state_comment") == "Synced", timeout, f"{svc.name} Synced")
            except ReadinessError as e:
                raise ReadinessError(f"{e}\n--- {svc.dir / 'error.log'} (tail) ---\n"
                                     f"{procs.tail(svc.dir / 'error.log')}") from None
            svc.start_s = time.monotonic() - t0

        first = start(0)
        synced(*first)
        if len(regions) > 1:  # the others start from its state: no state transfer over the emulated WAN
            self._seed_from(first[0], [self._mariadb_dirs(r, name, in_memory)[1] for r in regions[1:]])
            out.remove(first[0])
            synced(*start(0))
        rest = list(range(1, len(regions)))
        for k in range(0, len(rest), max(1, join_batch)):
            batch = [start(i) for i in rest[k:k + max(1, join_batch)]]
            for svc, t0 in batch:
                synced(svc, t0)
        n = len(regions)
        for svc in out:
            procs.wait_for(
                lambda svc=svc: self.status(svc, "wsrep_cluster_size").get("wsrep_cluster_size")
                == str(n), 60, f"{svc.name} cluster size {n}", svc.dir / "error.log")
        return out

    def _seed_from(self, first: Service, datadirs: list[Path]) -> None:
        """Stop the bootstrapped first member cleanly (its grastate.dat then holds the cluster's id and last
        seqno) and copy its data directory to every other member's, so each joins with the cluster's own
        state and needs no state transfer (44 rsync transfers of ~110 MB each crossed the emulated links at
        45 regions and starved the joins). Each copy leaves out the member-local files: Galera's ring
        buffer (galera.cache), its last view (gvwstate.dat); and may not bootstrap."""
        self.stop(first, grace=60)
        src = Path(first.info["datadir"])
        for data in datadirs:
            procs.run(["rsync", "-a", "--delete", "--exclude=galera.cache", "--exclude=gvwstate.dat",
                       f"{src}/", f"{data}/"], check=True, timeout=600)
            state = data / "grastate.dat"
            state.write_text(state.read_text().replace("safe_to_bootstrap: 1", "safe_to_bootstrap: 0"))
            shutil.chown(state, "mysql", "mysql")

    def set_provider_options(self, members: Iterable[Service], options: Mapping[str, str]) -> None:
        """Change dynamic Galera provider options on running members (read back to check).

        One option per statement, retried after the others when refused: Galera
        checks each against the current values (``evs.user_send_window`` may
        not exceed ``evs.send_window``), so the order depends on the direction.
        """
        for m in members:
            pending, last = dict(options), ""
            while pending:
                done = []
                for k, v in pending.items():
                    try:
                        self.sql(m, f"SET GLOBAL wsrep_provider_options='{k}={v}'")
                        done.append(k)
                    except LabError as e:
                        last = str(e).strip().splitlines()[-1]
                if not done:
                    raise LabError(f"{m.name}: Galera refused provider options {pending}: {last}")
                for k in done:
                    pending.pop(k)
            now = {k.strip(): v.strip() for k, _, v in (
                kv.partition("=") for kv in self.sql(m, "SELECT @@wsrep_provider_options").split(";"))}
            wrong = {k: now.get(k) for k, v in options.items() if now.get(k) != v}
            if wrong:
                raise LabError(f"{m.name}: provider options not applied: {wrong}")
            m.info["provider_options"] = {**m.info.get("provider_options", {}), **options}

    # ------------------------------------------------------------ memcached
    def start_memcached(self, region: str | None, *, port: int = MEMCACHED_PORT,
                        memory_mb: int = MEMCACHED_MEMORY_MB, connections: int = MEMCACHED_CONNECTIONS,
                        timeout: float = 20) -> Service:
        t0 = time.monotonic()
        d = self._dir(region, "memcached")
        addr = self._addr(region)
        argv = ["memcached", "-u", "memcache", "-l", addr, "-p", str(port), "-U", "0",
                "-m", str(memory_mb), "-c", str(connections), "-v"]
        proc = self._start(region, f"memcached-{region}", argv, d / "memcached.log")
        svc = Service("memcached", region, f"memcached-{region}", addr, port, d, proc,
                      info={"memory_mb": memory_mb})
        self.started.append(svc)
        proc.wait_ready(lambda: self.tcp_open(region, addr, port), timeout,
                        f"memcached in {region}")
        svc.start_s = time.monotonic() - t0
        return svc

    def flush_memcached(self, svc: Service, timeout: float = 5.0) -> None:
        """Empty a memcached (``flush_all``), as a new deployment's cache would be."""
        with socket.create_connection((svc.host, svc.port), timeout) as c:
            c.sendall(b"flush_all\r\n")
            answer = c.recv(64)
        if not answer.startswith(b"OK"):
            raise LabError(f"{svc.name}: flush_all answered {answer!r}")

    # ------------------------------------------------------------ Keystone
    def keystone_keys(self) -> Path:
        """Fernet and credential key repositories, made once per run, shared by all regions."""
        if self._keys_dir is not None:
            return self._keys_dir
        d = self._dir(None, "keystone-keys")
        # What `keystone-manage fernet_setup/credential_setup` write, without
        # two interpreter starts (~10-30 s on a busy 2-core machine): a
        # repository with key 0 (staged) and key 1 (primary), 32 random bytes
        # each, urlsafe-base64; directory 0700, keys 0600.
        for repo in ("fernet-keys", "credential-keys"):
            rd = d / repo
            rd.mkdir(mode=0o700, exist_ok=True)
            for idx in ("0", "1"):
                kf = rd / idx
                if not kf.exists():
                    fd = os.open(kf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(base64.urlsafe_b64encode(os.urandom(32)))
        self._keys_dir = d
        return d

    def start_keystone(
        self,
        region: str,
        *,
        db_host: str,
        db_password: str,
        db_port: int = 3306,
        db_user: str = "keystone",
        db_name: str = "keystone",
        memcached: Service | Iterable[str] | None = None,
        admin_password: str = "admin",
        db_sync: bool = False,
        bootstrap: bool = True,
        port: int = 5000,
        workers: int = 2,
        config: KeystoneConfig | None = None,
        timeout: float = 120,
    ) -> Service:
        """Keystone of ``region`` under gunicorn, on the shared database.

        ``db_sync`` once per database (the first region); ``bootstrap`` per
        region registers its endpoints (``--bootstrap-region-id region``).
        ``config``: the plan's Keystone settings (default: wanwide's, caching
        on when ``memcached`` is given); ``memcached``: this region's memcached
        service (or "host:port" list). ``info["cache"]`` holds the effective
        cache settings, ``info["url"]`` the identity URL (…/v3),
        ``info["timings"]`` the seconds spent in db_sync, bootstrap and start.
        """
        if self.net is None:
            raise LabError("start_keystone needs a lab network")
        t_all = time.monotonic()
        keys = self.keystone_keys()
        d = self._dir(region, "keystone")
        addr = self._addr(region)
        base = f"http://{addr}:{port}"
        if memcached is None:
            servers: list[str] = []
        elif isinstance(memcached, Service):
            servers = [f"{memcached.host}:{memcached.port}"]
        else:
            servers = list(memcached)
        cfg = config or KeystoneConfig(cache=bool(servers), sections=KEYSTONE_SECTIONS)
        if cfg.cache and not servers:
            raise LabError(f"keystone in {region}: caching is on but no memcached was given")
        sections = keystone_conf(cfg.conf(servers), public_endpoint=base, keys=keys,
                                 connection=f"mysql+pymysql://{db_user}:{db_password}@{db_host}:{db_port}/{db_name}")
        conf = d / "keystone.conf"
        conf.write_text(render_ini(sections))
        timings: dict[str, float] = {}
        if db_sync:
            timings["db_sync"] = self._keystone_manage(region, d, conf, ["db_sync"], "db_sync")
        if bootstrap:
            timings["bootstrap"] = self._keystone_manage(region, d, conf, [
                "bootstrap", "--bootstrap-password", admin_password, "--bootstrap-region-id", region,
                "--bootstrap-public-url", base, "--bootstrap-internal-url", base,
                "--bootstrap-admin-url", base], "bootstrap")
        t0 = time.monotonic()
        svc = self._gunicorn(region, d, conf, addr, port, workers)
        svc.info |= {"url": f"{base}/v3", "cache": sections["cache"], "db": f"{db_host}:{db_port}"}

        def ready() -> bool:
            with urllib.request.urlopen(f"{base}/v3", timeout=5) as resp:
                return resp.status == 200

        svc.proc.wait_ready(ready, timeout, f"keystone in {region} answering {base}/v3")
        timings["start"] = round(time.monotonic() - t0, 2)
        svc.info["timings"] = timings
        svc.start_s = time.monotonic() - t_all
        return svc

    def _keystone_manage(self, region: str, d: Path, conf: Path, args: list[str], label: str) -> float:
        """``keystone-manage ARGS`` in the region; its output in ``LABEL.log``; seconds it took."""
        t0 = time.monotonic()
        r = procs.run([str(paths.keystone_bin("keystone-manage")), "--config-file", str(conf), *args],
                      netns=self._ns(region), check=False, timeout=600)
        (d / f"{label}.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise LabError(f"keystone-manage {label} in {region} failed:\n{procs.tail_text(r.stdout + r.stderr)}")
        return round(time.monotonic() - t0, 2)

    def _gunicorn(self, region: str, d: Path, conf: Path, addr: str, port: int, workers: int) -> Service:
        """Keystone's WSGI app under gunicorn in the region (not yet waited for)."""
        # oslo.config parses sys.argv: under gunicorn it would see gunicorn's
        # flags, so the app is loaded from a module that resets argv first.
        (d / "wanwide_keystone_wsgi.py").write_text(
            "import sys\nsys.argv = sys.argv[:1]\n"
            "from keystone.wsgi.api import application  # noqa: E402,F401\n")
        argv = [str(paths.keystone_bin("gunicorn")), "--bind", f"{addr}:{port}",
                "--workers", str(workers), "--timeout", "300", "--graceful-timeout", "5",
                "--chdir", str(d), "--access-logfile", str(d / "access.log"),
                "wanwide_keystone_wsgi:application"]
        proc = self._start(region, f"keystone-{region}", argv, d / "keystone.log",
                           env={"OS_KEYSTONE_CONFIG_FILES": str(conf)}, cwd=d)
        svc = Service("keystone", region, f"keystone-{region}", addr, port, d, proc,
                      info={"config": str(conf), "workers": workers})
        self.started.append(svc)
        return svc

    # ------------------------------------------------------------ S3 (versitygw)
    def start_s3(self, *, region: str | None = None, host: str | None = None, port: int = 7070,
                 access_key: str = "wanwide", secret_key: str = "wanwide-secret",
                 data_dir: str | Path | None = None, timeout: float = 30) -> Service:
        """versitygw serving ``data_dir`` (posix backend) on ``host:port``.

        Default: in the root namespace on 127.0.0.1. With ``host`` =
        :data:`wanwide.providers.lab.netns.HOST_ADDRESS` it is reachable from every region
        through the host links (bind after the network is built).
        """
        t0 = time.monotonic()
        gw = paths.versitygw()
        if not gw.exists():
            raise LabError(f"{gw} missing: run hack/install-lab.sh")
        d = self._dir(region, "s3")
        data = Path(data_dir) if data_dir else d / "data"
        data.mkdir(parents=True, exist_ok=True)
        h = host or (self._addr(region) if region else "127.0.0.1")
        if self.tcp_open(region, h, port):  # else the readiness wait below would take another server for ours
            raise LabError(f"S3: {h}:{port} is already in use by another process; stop it or give another port")
        proc = self._start(region, "versitygw", [str(gw), "--port", f"{h}:{port}", "posix",
                                                 str(data)], d / "versitygw.log",
                           env={"ROOT_ACCESS_KEY": access_key, "ROOT_SECRET_KEY": secret_key})
        svc = Service("s3", region, "versitygw", h, port, d, proc,
                      info={"url": f"http://{h}:{port}", "access_key": access_key,
                            "secret_key": secret_key, "data_dir": str(data),
                            "region": "us-east-1"})
        self.started.append(svc)
        proc.wait_ready(lambda: self.tcp_open(region, h, port), timeout, "versitygw")
        svc.start_s = time.monotonic() - t0
        return svc


def mariadb_cnf(d: Path, data: Path, address: str, port: int, server: Mapping[str, str]) -> dict[str, Any]:
    """my.cnf ``[mariadbd]`` of a lab server: where it lives here, then the plan's server options."""
    return {
        "user": "mysql",
        "datadir": str(data),
        "socket": str(d / "mysqld.sock"),
        "pid-file": str(d / "mysqld.pid"),
        "log-error": str(d / "error.log"),
        "bind-address": address,
        "port": port,
        "skip-name-resolve": None,
        **server,
    }


def galera_provider_string(address: str, provider_options: Mapping[str, str]) -> str:
    """wsrep_provider_options: where this member listens, then the plan's options."""
    opts = {"gmcast.listen_addr": f"tcp://{address}:4567", "ist.recv_addr": f"{address}:4568",
            **provider_options}
    return "; ".join(f"{k}={v}" for k, v in opts.items())


def _parse_options(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (kv.partition("=") for kv in text.split(";")) if k.strip()}


def galera_cnf(address: str, gcomm: str, cluster: str, region: str,
               provider_options: Mapping[str, str]) -> dict[str, Any]:
    """The wsrep settings of one lab Galera member (rsync state transfer)."""
    return {
        "binlog_format": "ROW",
        "default_storage_engine": "InnoDB",
        "innodb_autoinc_lock_mode": 2,
        "wsrep_on": "ON",
        "wsrep_provider": GALERA_PROVIDER,
        "wsrep_cluster_name": cluster,
        "wsrep_cluster_address": gcomm,
        "wsrep_node_address": address,
        "wsrep_node_name": region,
        "wsrep_sst_method": "rsync",
        "wsrep_sst_receive_address": f"{address}:4444",
        "wsrep_provider_options": '"' + galera_provider_string(address, provider_options) + '"',
    }


def render_cnf(cnf: Mapping[str, Any]) -> str:
    lines = ["[mariadbd]"]
    for k, v in cnf.items():
        if v is None:
            lines.append(k)
        elif v is not False:
            lines.append(f"{k}={v}")
    return "\n".join(lines) + "\n"


def keystone_conf(shared: Mapping[str, Mapping[str, Any]], *, public_endpoint: str, connection: str,
                  keys: Path) -> dict[str, dict[str, Any]]:
    """keystone.conf of a lab region: the plan's sections, then where things are here."""
    sections = {s: dict(kv) for s, kv in shared.items()}
    sections.setdefault("DEFAULT", {}).update({"debug": False, "use_stderr": True, "public_endpoint": public_endpoint})
    sections.setdefault("database", {})["connection"] = connection
    sections["fernet_tokens"] = {"key_repository": str(keys / "fernet-keys")}
    sections["fernet_receipts"] = {"key_repository": str(keys / "fernet-keys")}
    sections["credential"] = {"key_repository": str(keys / "credential-keys")}
    return sections


def render_ini(sections: Mapping[str, Mapping[str, Any]]) -> str:
    def text(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return "".join(f"[{s}]\n" + "".join(f"{k} = {text(v)}\n" for k, v in kv.items()) + "\n"
                   for s, kv in sections.items())


def _make_traversable(path: Path) -> None:
    """mysql must reach its files: make every parent of ``path`` world-executable."""
    p = path.resolve()
    for parent in [p, *p.parents]:
        try:
            mode = parent.stat().st_mode
        except OSError:
            continue
        if not mode & 0o001:
            raise LabError(
                f"{parent} is not traversable by other users (mode {oct(mode & 0o777)}): the "
                f"MariaDB and memcached processes run as their own users; choose a run dir "
                f"under /tmp or /var/tmp")
