"""The lab's operations: what the lifecycle's actions come down to on this machine (:class:`LabRun`, the
``LabOps`` of providers/lab/trial.py): a deployment stage brought up (bringup.py), a link read and set, the
probe, the runner processes (configured, started, released together after the quiet-machine gate, polled,
their bundles stored from the host, stopped), the bundles collected, a deployment closed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wanwide.core import lifecycle as lc
from wanwide.core import timestamps as ts
from wanwide.core.api.units import seconds
from wanwide.core.contracts import RunnerConfig
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.runner import Addresses, config_json, runner_config
from wanwide.core.plan.trial import TrialPlan
from wanwide.pipeline.runner.contention import OwnProcesses, netns_inode
from wanwide.pipeline.runner.run import READY
from wanwide.providers.lab import bringup, paths
from wanwide.providers.lab.bringup import ADMIN_PASSWORD, ROOT_PASSWORD
from wanwide.providers.lab.deployment import Deployment
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.quiet import QuietGate, wait_quiet
from wanwide.providers.lab.results import (
    Earlier,
    bundles_root,
    failure_of,
    manifest_objectives,
    succeeded_bundles,
    upload,
)

Say = Callable[..., None]



@dataclass
class Runners:
    """One attempt's runner processes (region → process), their logs and the release file, which of their
    bundles are stored (region → stored or not), and why the last one could not be."""

    procs: dict[str, subprocess.Popen]
    logs: Path
    release: Path
    regions: list[str]
    plan: TrialPlan
    attempt: int = 1
    stored: dict[str, bool] = field(default_factory=dict)
    store_error: str | None = None


class LabRun:
    """The lab's operations for one run's trials (``out``: its output; ``live``: its status lines; ``earlier``: the
    trials ``--done`` data sets hold; ``layouts``: each trial's deployment's layout)."""

    def __init__(self, out: Path, live: Any, shaper: str = "auto", work: Path | None = None,
                 gate: QuietGate | None = None, layout: str = "auto"):
        self.out = out
        self.live = live
        self.shaper = shaper
        self.layout = layout
        self.layouts: dict[tuple[str, str], str] = {}  # (Benchmark, trial) → its deployment's layout
        self.earlier: Earlier = {}  # the trials --done data sets hold
        self.gate = gate or QuietGate()
        self.work = work or Path(os.environ.get("WANWIDE_LAB_WORK", "/var/tmp/wanwide-lab"))
        self.checked: dict[tuple[str, str], dict[str, Any]] = {}  # (Benchmark, trial) → its network check in brief

    # ---- LabOps: what the lifecycle's actions come down to on this machine (providers/lab/trial.py) --------

    def deploy(self, p: TrialPlan, dep: Deployment | None, stage: lc.Stage, shared: bool, retry: bool,
               say: Say) -> Deployment:
        """``dep`` (None: none yet) with ``stage`` up for ``p`` (core/lifecycle/deploy.py; bringup.py)."""
        if stage.service == lc.PLACE:
            if p.backend == "cockroachdb" and not shutil.which("cockroach"):
                raise LabError("backend cockroachdb needs the Kubernetes provider (or a `cockroach` binary on PATH); "
                               "use mariadb or galera in the lab")
            dep = bringup.place(p, dep, shared, shaper=self.shaper, work=self.work, say=say,
                                layout=self.layouts.get((p.benchmark, p.id), self.layout))
            dep.up.add(stage.name)
            return dep
        if dep is None:
            raise LabError(f"stage {stage.name} before the trial's place")
        bringup.bring_up(dep, p, stage, retry, self.out / "logs" / p.benchmark / p.id / "deploy-failed", say)
        return dep

    def links(self, dep: Deployment) -> dict[Pair, OneWay]:
        return dep.net.in_force()

    def shape(self, dep: Deployment, want: dict[Pair, OneWay]) -> None:
        """Every link as ``want`` says: the shaping lifted for the deployment back first, then each pair that
        differs (a fault: a cut, a loss window)."""
        dep.net.restore()
        for pair, shaping in want.items():
            if dep.net.links.get(pair) != shaping:
                dep.net.set_link(*pair, shaping)

    def measure(self, dep: Deployment, a: str, b: str, n: int) -> list[float | None]:
        """``n`` probes ``a``→``b``: each one's RTT in ms, None for one lost."""
        return dep.net.measure_rtt(a, b, samples=n, with_lost=True)

    def record_network(self, dep: Deployment, p: TrialPlan, rows: list[dict[str, Any]]) -> None:
        """The check's rows in ``network/<benchmark>/<trial>.json`` (with the shaper's counters then), and in
        brief in the trial's bundles (the runners' configuration: ``network.check``)."""
        # per Benchmark: a file may hold several, whose trial ids (t000…) repeat
        (self.out / "network" / p.benchmark).mkdir(parents=True, exist_ok=True)
        self.checked[(p.benchmark, p.id)] = lc.summary(rows)
        (self.out / "network" / p.benchmark / f"{p.id}.json").write_text(json.dumps(
            {"shaper": dep.net.shaper, "deployment": dep.describe(p), "rule": lc.RULE, "pairs": rows,
             "shaper_counters": shaper_counters(dep.net)}, indent=1))

    def start_runners(self, dep: Deployment, p: TrialPlan, attempt: int) -> Runners:
        logs = self.out / "logs" / p.benchmark / p.id
        logs.mkdir(parents=True, exist_ok=True)
        release = logs / f"release-{attempt}.json"
        release.unlink(missing_ok=True)
        return Runners(self._start_runners(dep, p, attempt, logs, release), logs, release, p.load_regions, p, attempt)

    def ready(self, runners: Runners) -> bool:
        return all(_ready(runners.logs / f"runner-{r}.log") or runners.procs[r].poll() is not None
                   for r in runners.regions)

    def release(self, dep: Deployment, p: TrialPlan, runners: Runners, say: Say) -> datetime:
        """Every runner is ready (prepared, warmed up): empty the caches, wait for a quiet machine, then
        release the runners together; that instant is the load start."""
        for svc in dep.svc.started:
            if svc.kind == "memcached":
                dep.svc.flush_memcached(svc)  # the warm-up filled them: every trial starts cache-cold
        gate = wait_quiet(self.gate, lambda m: say("Loading", m), own=_own_processes(dep, p))
        now = datetime.now(UTC)
        tmp = runners.release.with_suffix(".tmp")
        tmp.write_text(json.dumps({"released_at": ts.iso(now, precise=True), "gate": gate}))
        tmp.replace(runners.release)
        for pr in runners.procs.values():
            if pr.poll() is None:
                pr.send_signal(signal.SIGUSR1)
        waited = f"after {gate['waited_s']:.0f}s of quiet-machine gate" if gate.get("waited_s") else "gate off"
        say("Loading", f"all {len(runners.procs)} runner(s) ready: released together ({waited})")
        return now

    def poll(self, runners: Runners) -> dict[str, str]:
        """Each region's runner: running, failed, or done once its bundle is stored (``results.s3`` from the
        host: the regions' namespaces do not reach it), ``stopped`` when that failed (its bundle kept)."""
        # every runner each time (an ended runner left unreaped is a zombie whose CPU the other regions'
        # windows cannot place: pipeline/runner/contention.py)
        codes = {r: pr.poll() for r, pr in runners.procs.items()}
        for r, rc in codes.items():
            if rc == 0 and r not in runners.stored:
                why = self._store(runners.plan, r)
                runners.stored[r] = not why
                runners.store_error = why or runners.store_error
        return {r: "running" if rc is None else "failed" if rc != 0 else "complete" if runners.stored[r] else "stopped"
                for r, rc in codes.items()}

    def _store(self, p: TrialPlan, region: str) -> str:
        """Upload one region's bundle to results.s3 (if any); "" or why it failed."""
        b = succeeded_bundles(self.out, p).get(region)
        if b is None:
            return ""
        why = upload(self.out, p, [b], lambda *_: None)
        return (f"{why}; the bundle is kept in {b} (`wanwide runner upload` sends it later)") if why else ""

    def said(self, runners: Runners, regions: list[str]) -> dict[str, str]:
        """Region → what its failed runner said of its failure in the bundle it wrote for this attempt."""
        return {r: w for r in regions if (w := failure_of(self.out, runners.plan, r, runners.attempt))}

    def progress(self, runners: Runners) -> str:
        return _last_progress(runners.logs / f"runner-{runners.regions[0]}.log")

    def stop(self, runners: Runners) -> None:
        for pr in runners.procs.values():
            if pr.poll() is None:
                pr.kill()
                pr.wait(timeout=30)

    def collect(self, p: TrialPlan) -> tuple[list[str], list[str], str]:
        have = succeeded_bundles(self.out, p)
        return [r for r in p.load_regions if r in have], [r for r in p.load_regions if r not in have], \
            str(bundles_root(self.out, p))

    def objectives(self, p: TrialPlan) -> dict[str, list[dict[str, Any]] | None] | None:
        """Once every load region's bundle is there: region → the objectives its manifest recorded."""
        have = succeeded_bundles(self.out, p)
        if any(r not in have for r in p.load_regions):
            return None
        return {r: manifest_objectives(have[r] / "manifest.json") for r in p.load_regions}

    def close(self, dep: Deployment) -> None:
        dep.close()

    # ---- the runners ---------------------------------------------------------------------------

    def _config(self, dep: Deployment, p: TrialPlan, region: str, attempt: int, release: Path) -> RunnerConfig:
        """The plan's runner configuration with the lab's addresses, versions and release."""
        targets: dict[tuple[str, str], tuple[str, int]] = {}
        for o in p.region_names:
            targets[(o, "keystone")] = (dep.ks[o].host, dep.ks[o].port)
            targets[(o, "database")] = (dep.db[o].host, dep.db[o].port)
        mc = [s for s in dep.svc.started if s.kind == "memcached" and s.region == region]
        where = Addresses(keystone_url=dep.ks[region].url, database=(dep.db[region].host, dep.db[region].port),
                          memcache_servers=[f"{s.host}:{s.port}" for s in mc], targets=targets,
                          members={o: targets[(o, "database")] for o in p.region_names} if p.backend == "galera" else {})
        budget = seconds(p.spec.timeouts.loading)
        own = _own(dep, p)
        from wanwide.providers.lab import counters

        links = release.parent / "links.json"  # the shaped links, for the runner's reading of their counters
        links.write_text(json.dumps(counters.links_doc(dep.net), indent=1))
        return runner_config(p, region, where, start_at=None, attempt=attempt, results=None,
                             local_dir=str(bundles_root(self.out, p)), namespace="lab",
                             versions={**lab_versions(), "lab-shaper": dep.net.shaper}, deployment=dep.describe(p),
                             new_deployment=not dep.trials, release={"file": str(release), "timeout_s": budget},
                             contention=own, network_check=self.checked.get((p.benchmark, p.id)),
                             shaper_counters=[sys.executable, "-m", "wanwide.providers.lab.counters", str(links)],
                             netns={r: dep.net.netns_path(r) for r in p.region_names})

    def _start_runners(self, dep: Deployment, p: TrialPlan, attempt: int, logs: Path,
                       release: Path) -> dict[str, subprocess.Popen]:
        wanwide = str(Path(sys.executable).with_name("wanwide"))
        env = dict(os.environ, OS_PASSWORD=ADMIN_PASSWORD, DB_ROOT_PASSWORD=ROOT_PASSWORD,
                   WANWIDE_RALLY=str(paths.rally_bin()))
        procs: dict[str, subprocess.Popen] = {}
        for r in p.load_regions:
            path = logs / f"runner-{r}.json"
            path.write_text(json.dumps(config_json(self._config(dep, p, r, attempt, release)), indent=1))
            fh = open(logs / f"runner-{r}.log", "w")  # noqa: SIM115 - closed after wait
            procs[r] = dep.net.popen_in(r, [wanwide, "runner", "run", "--config", str(path)], env=env,
                                        stdout=fh, stderr=subprocess.STDOUT)
        return procs

_VERSIONS: dict[str, str] = {}


def lab_versions() -> dict[str, str]:
    """Versions of what the lab runs (Keystone from its venv, MariaDB, Galera; Nova, Placement, Glance, Neutron
    and RabbitMQ where installed), for the bundles."""
    if not _VERSIONS:
        for venv, dists in ((paths.keystone_venv(), ("keystone", "oslo_db", "pymysql")),
                            (paths.openstack_venv(), ("nova", "openstack_placement", "glance", "neutron",
                                                      "oslo_messaging"))):
            site = sorted(venv.glob("lib/python3*/site-packages"))
            for dist in dists:
                for d in (site[-1].glob(f"{dist}-*.dist-info") if site else []):
                    _VERSIONS[dist.replace("_", ".")] = d.name[len(dist) + 1:-len(".dist-info")]
        for key, argv in (("mariadb", ["mariadbd", "--version"]),
                          ("galera", ["dpkg-query", "-W", "-f", "${Version}", "galera-4"]),
                          ("rabbitmq", ["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"])):
            try:
                out = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            words = out.split()
            ver = words[words.index("Ver") + 1] if "Ver" in words[:-1] else out.strip()
            if ver:
                _VERSIONS[key] = ver
    return dict(_VERSIONS)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _ready(path: Path) -> bool:
    """Whether the runner logging to ``path`` said it is ready (prepared, warmed up, waiting)."""
    return f"[runner] {READY}" in _text(path)


def _last_progress(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.startswith("[runner]")]
    except OSError:
        return ""
    return lines[-1][len("[runner] "):][:150] if lines else ""


def _own(dep: Deployment, p: TrialPlan) -> dict[str, list]:
    """The experiment's processes as the runner's configuration names them: the regions' and hubs'
    network namespaces, this process and the link processes outside them (wirefilter's, linkemu's; of
    the links between regions and of those to hubs)."""
    links = [*dep.net.pairs.values(), *dep.net.edges.values()]
    hubs = dep.net.layout.hubs if dep.net.layout is not None else []
    return {"netns": [f"/var/run/netns/{dep.net.node_netns(n)}" for n in [*p.region_names, *hubs]],
            "pids": [os.getpid(), *sorted({pid for lk in links for pid in lk.pids.values()})]}


def _own_processes(dep: Deployment, p: TrialPlan) -> OwnProcesses:
    own = _own(dep, p)
    return OwnProcesses(netns=[i for i in map(netns_inode, own["netns"]) if i is not None], pids=own["pids"])


def shaper_counters(net: Any) -> dict[str, Any]:
    """The shapers' counters of ``net``'s links now (providers/lab/counters.py)."""
    from wanwide.providers.lab import counters

    return counters.read(counters.links_doc(net))


__all__ = ["LabRun", "Runners", "lab_versions", "shaper_counters"]
