"""``wanwide lab run``: carry out a Benchmark's trials on this machine, for real.

The same plan as the operator (matrix, links, runner configuration, bundles,
report); regions are network namespaces, the WAN is shaped with netem, linkemu or
wirefilter, and MariaDB/Galera, memcached and Keystone run as processes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wanwide.core import timestamps as ts
from wanwide.core.api.units import seconds
from wanwide.core.contracts import RunnerConfig
from wanwide.core.lifecycle import crashed, deployments
from wanwide.core.plan.layout import Layout, plan_layout
from wanwide.core.plan.links import OneWay, Pair
from wanwide.core.plan.runner import Addresses, config_json, runner_config
from wanwide.core.plan.trial import TrialPlan
from wanwide.pipeline.runner.contention import OwnProcesses, netns_inode
from wanwide.pipeline.runner.run import READY
from wanwide.providers.lab import netns, paths
from wanwide.providers.lab.deployment import Deployment
from wanwide.providers.lab.procs import LabError, keep_tails
from wanwide.providers.lab.quiet import QuietGate, wait_quiet
from wanwide.providers.lab.results import (
    Earlier,
    bundles_complete,
    bundles_root,
    check_results,
    done_earlier,
    drop_interrupted,
    earlier_mismatches,
    earlier_runs,
    succeeded_bundles,
    upload,
)
from wanwide.providers.lab.services import Service, Services
from wanwide.providers.lab.trial import LabTrial

ADMIN_PASSWORD = "wanwide-admin"
DB_PASSWORD = "wanwide-keystone"
ROOT_PASSWORD = "wanwide-root"
Say = Callable[..., None]


class Live:
    """One status line per change (also appended to ``log``); the long waits print a heartbeat."""

    def __init__(self, total: int, stream=sys.stdout, log: Path | None = None):
        self.total, self.stream, self.log = total, stream, log
        self.t0 = time.monotonic()

    def say(self, i: int, p: TrialPlan, phase: str, detail: str = "") -> None:
        params = ", ".join(f"{k}={v}" for k, v in p.parameters.items() if k != "repetition")
        if p.spec.matrix.repetitions > 1:
            params += f", repetition {p.repetition + 1}/{p.spec.matrix.repetitions}"
        el = time.monotonic() - self.t0
        line = (f"[{el:6.0f}s] trial {i + 1}/{self.total} {p.id} ({params}) {phase}"
                + (f": {detail}" if detail else "") + "\n")
        self.stream.write(line)
        self.stream.flush()
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {p.benchmark} {line}")


@dataclass
class TrialOutcome:
    benchmark: str
    trial: str
    result: str  # succeeded | failed | skipped (complete from an earlier run) | pending (--stop-after)
    reason: str = ""
    earlier_attempts: list[str] = field(default_factory=list)  # why each earlier attempt failed
    bundles: list[str] = field(default_factory=list)
    network: dict[str, Any] = field(default_factory=dict)


PROBE_SAMPLES = 20


@dataclass
class Runners:
    """One attempt's runner processes (region → process), their logs and the release file, which of their
    bundles are stored (region → stored or not), and why the last one could not be."""

    procs: dict[str, subprocess.Popen]
    logs: Path
    release: Path
    regions: list[str]
    plan: TrialPlan
    stored: dict[str, bool] = field(default_factory=dict)
    store_error: str | None = None


class LabRun:
    """Runs trials on lab deployments: provision (or re-shape), verify the network, load, collect."""

    def __init__(self, out: Path, live: Live, shaper: str = "auto", work: Path | None = None,
                 gate: QuietGate | None = None, layout: str = "auto"):
        self.out = out
        self.live = live
        self.shaper = shaper
        self.layout = layout
        self.layouts: dict[tuple[str, str], str] = {}  # (Benchmark, trial) → its deployment's layout
        self.earlier: Earlier = {}  # the trials --done data sets hold
        self.gate = gate or QuietGate()
        self.work = work or Path(os.environ.get("WANWIDE_LAB_WORK", "/var/tmp/wanwide-lab"))

    # ---- LabOps: what the lifecycle's actions come down to on this machine (providers/lab/trial.py) -----------

    def deploy(self, p: TrialPlan, dep: Deployment | None, shared: bool, say: Say) -> Deployment:
        """A deployment for ``p``: ``dep`` re-shaped when it serves it, else new namespaces, links and services."""
        if p.backend == "cockroachdb" and not shutil.which("cockroach"):
            raise LabError("backend cockroachdb needs the Kubernetes provider (or a `cockroach` binary on PATH); "
                           "use mariadb or galera in the lab")
        new = dep is None
        dep = self._provision(p, dep, shared, say)
        if not new:
            return dep
        try:  # on an unconstrained WAN, then constrained (the Injecting phase finds the links as asked)
            with dep.net.unconstrained():
                self._services(dep, p, say)
        except BaseException:  # a deployment that never came up is nobody's: what it started goes now
            kept = keep_tails(dep.svc.run_dir, self.out / "logs" / p.benchmark / p.id / "deploy-failed")
            if kept:
                say("Provisioning", f"the failed deployment's service logs: {kept}")
            dep.close()
            raise
        return dep

    def links(self, dep: Deployment) -> dict[Pair, OneWay]:
        return dep.net.links

    def set_link(self, dep: Deployment, a: str, b: str, shaping: OneWay) -> None:
        dep.net.set_link(a, b, shaping)

    def measure(self, dep: Deployment, a: str, b: str) -> list[float]:
        return dep.net.measure_rtt(a, b, samples=PROBE_SAMPLES)

    def record_network(self, dep: Deployment, p: TrialPlan, rows: list[dict[str, Any]]) -> None:
        # per Benchmark: a file may hold several, whose trial ids (t000…) repeat
        (self.out / "network" / p.benchmark).mkdir(parents=True, exist_ok=True)
        (self.out / "network" / p.benchmark / f"{p.id}.json").write_text(json.dumps(
            {"shaper": dep.net.shaper, "deployment": dep.describe(p), "pairs": rows}, indent=1))

    def start_runners(self, dep: Deployment, p: TrialPlan, attempt: int) -> Runners:
        logs = self.out / "logs" / p.benchmark / p.id
        logs.mkdir(parents=True, exist_ok=True)
        release = logs / f"release-{attempt}.json"
        release.unlink(missing_ok=True)
        return Runners(self._start_runners(dep, p, attempt, logs, release), logs, release, p.load_regions, p)

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

    def close(self, dep: Deployment) -> None:
        dep.close()

    # ---- the lab's own steps --------------------------------------------------------------------

    def _provision(self, p: TrialPlan, dep: Deployment | None, shared: bool, say: Say) -> Deployment:
        if dep is not None:
            say("Provisioning", f"re-shaping the links of deployment {dep.id} (trial {len(dep.trials) + 1} on it)")
            dep.adapt(p)
            return dep
        # links a later trial or a fault window re-shapes go through the shaper from the start
        net = netns.build(p.region_names, p.links, shaper=self.shaper, handle_signals=False,
                          shapeable=shared or bool(p.faults), benchmark=p.benchmark,
                          layout=self.layouts.get((p.benchmark, p.id), self.layout),
                          group_of={r.name: r.group for r in p.regions})
        d = net.describe()
        say("Provisioning", f"{len(p.regions)} namespaces, shaper {net.shaper}, {d['layout']} layout "
            f"({len(net.pairs) + len(net.edges)} links{', hubs ' + ', '.join(d['hubs']) if d['hubs'] else ''})"
            + (" (a deployment shared by this Benchmark's trials)" if shared else "")
            + "; services start on it unconstrained, then it is shaped")
        run_dir = self.work / f"{p.benchmark}-{net.tag}"
        net.state.add_dir(run_dir)  # data, keys, service logs: removed with the network
        return Deployment(net, Services(net, run_dir), {}, {}, shared)

    def _services(self, dep: Deployment, p: TrialPlan, say: Say) -> None:
        if dep.ks:
            return
        dep.db = self._database(dep.svc, p)
        dep.galera_dynamic = p.database.galera_dynamic
        dep.ks = self._keystones(dep.svc, p, dep.db, say)

    def _database(self, svc: Services, p: TrialPlan) -> dict[str, Service]:
        """Region → the database endpoint its Keystone uses."""
        grant = (f"CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '{ROOT_PASSWORD}'; "
                 "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%'; FLUSH PRIVILEGES;")
        cfg = p.database
        if p.backend == "mariadb":
            db = svc.start_mariadb(p.primary_region, in_memory=cfg.in_memory, server=cfg.server)
            svc.create_database(db, password=DB_PASSWORD)
            svc.sql(db, grant)
            return {r: db for r in p.region_names}
        members = svc.start_galera(p.region_names, in_memory=cfg.in_memory, provider_options=cfg.galera,
                                   server=cfg.server)
        svc.create_database(members[0], password=DB_PASSWORD)
        svc.sql(members[0], grant)
        return dict(zip(p.region_names, members, strict=True))

    def _keystones(self, svc: Services, p: TrialPlan, db: dict[str, Service], say: Say) -> dict[str, Service]:
        """The first region creates the schema; the others then bootstrap and start in parallel."""
        from concurrent.futures import ThreadPoolExecutor

        def one(k: int, r: str) -> Service:
            mc = svc.start_memcached(r) if p.keystone.cache else None
            ks = svc.start_keystone(r, db_host=db[r].host, db_port=db[r].port, db_password=DB_PASSWORD,
                                    memcached=mc, admin_password=ADMIN_PASSWORD, db_sync=k == 0,
                                    config=p.keystone, workers=p.keystone.processes)
            say("Provisioning", f"keystone {r} up, {p.keystone.processes} process(es) ({ks.start_s:.0f}s)")
            return ks

        first = p.schema_region
        out = {first: one(0, first)}
        others = [r for r in p.region_names if r != first]
        with ThreadPoolExecutor(max_workers=min(8, max(1, len(others)))) as ex:
            futures = {r: ex.submit(one, k + 1, r) for k, r in enumerate(others)}
            for r, f in futures.items():
                out[r] = f.result()
        return out

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
        return runner_config(p, region, where, start_at=None, attempt=attempt, results=None,
                             local_dir=str(bundles_root(self.out, p)), namespace="lab",
                             versions={**lab_versions(), "lab-shaper": dep.net.shaper}, deployment=dep.describe(p),
                             new_deployment=not dep.trials, release={"file": str(release), "timeout_s": budget},
                             contention=own)

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
    """Versions of what the lab runs (Keystone from its venv, MariaDB, Galera), for the bundles."""
    if not _VERSIONS:
        site = sorted(paths.keystone_venv().glob("lib/python3*/site-packages"))
        for dist in ("keystone", "oslo_db", "pymysql"):
            for d in (site[-1].glob(f"{dist}-*.dist-info") if site else []):
                _VERSIONS[dist.replace("_", ".")] = d.name[len(dist) + 1:-len(".dist-info")]
        for key, argv in (("mariadb", ["mariadbd", "--version"]),
                          ("galera", ["dpkg-query", "-W", "-f", "${Version}", "galera-4"])):
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


def _group(runner: LabRun, group: list[TrialPlan], position: dict[int, int], outcomes: list[TrialOutcome]) -> None:
    """The trials of one deployment group, skipping those whose bundles are already complete; each outcome
    goes to ``outcomes`` as it ends (an interrupted group's ended trials are recorded too)."""
    todo = []
    for p in group:
        complete = bundles_complete(runner.out, p)
        dropped = drop_interrupted(runner.out, p, keep=complete or [])
        if dropped:
            runner.live.say(position[id(p)], p, "Resuming", f"removed {len(dropped)} bundle(s) or work dir(s) "
                            "an interrupted run left")
        why = done_why(runner, p)
        if why:
            runner.live.say(position[id(p)], p, "Skipped", why)
            outcomes.append(TrialOutcome(p.benchmark, p.id, "skipped"))
        else:
            todo.append(p)
    dep: Deployment | None = None
    try:
        for k, p in enumerate(todo):
            i = position[id(p)]
            lt = LabTrial(runner, p, lambda phase, detail="", i=i, p=p: runner.live.say(i, p, phase, detail),
                          events_dir=runner.out / "events" / p.benchmark, dep=dep, shared=len(todo) > 1,
                          keep=k + 1 < len(todo))
            try:
                final = lt.run()
            except KeyboardInterrupt:  # interrupted (SIGINT, SIGTERM): what this trial started goes too
                for r in lt.runners.values():
                    runner.stop(r)
                if lt.dep is not None:
                    lt.dep.close()
                dep = None
                raise
            except Exception as e:  # a bug: this trial fails at once (trying again runs the same code), the others run
                traceback.print_exc()
                for r in lt.runners.values():
                    runner.stop(r)
                if lt.dep is not None:
                    lt.dep.close()
                step = crashed(lt.status.get("phase") or "Provisioning", e)
                final = {"phase": "Failed", "reason": step.reason, "outcomeMessage": step.message}
                lt.dep = None
            dep = lt.dep
            o = outcome(p, final, lt, runner.out)
            if dep is not None and o.result == "succeeded":
                dep.trials.append(p.id)
            outcomes.append(o)
            runner.live.say(i, p, o.result.capitalize(), o.reason[:300])
    finally:
        if dep is not None:
            runner.live.say(position[id(todo[-1])], todo[-1], "CleaningUp", f"deployment {dep.id}")
            dep.close()


def done_why(runner: LabRun, p: TrialPlan) -> str:
    """Why trial ``p`` needs no run ("" if it does): its complete bundles in the output, or a ``--done``
    data set holding it."""
    if bundles_complete(runner.out, p):
        return "complete bundles already in the output"
    return "done in a --done data set" if done_earlier(runner.earlier, p) else ""


def outcome(p: TrialPlan, final: dict[str, Any], lt: LabTrial, out: Path) -> TrialOutcome:
    """What trials.json records of a trial that ended."""
    ok = final.get("phase") == "Succeeded"
    reason = "" if ok else f"{final.get('reason') or 'Failed'}: {final.get('outcomeMessage') or final.get('message') or ''}"
    earlier = [f"attempt {e['attempt']}: {e['message']}" for e in lt.log if e["reason"] == "LoadRetry"]
    return TrialOutcome(p.benchmark, p.id, "succeeded" if ok else "failed", reason, earlier_attempts=earlier,
                        bundles=[str(b) for b in bundles_complete(out, p) or []],
                        network={"pairs": getattr(lt, "rows", [])})


def _summary(out: Path, trials: list[TrialPlan], outcomes: list[TrialOutcome], report: bool) -> int:
    failed = [o for o in outcomes if o.result == "failed"]
    pending = [o for o in outcomes if o.result == "pending"]
    roots = sorted({bundles_root(out, p) for p in trials})
    if report and any(r.exists() for r in roots):
        from wanwide.pipeline.results.report import build_report

        res = build_report([r for r in roots if r.exists()], out / "report")
        from wanwide.pipeline.results.history import (
            remember,  # the campaign joins `wanwide history`
        )

        remember(res.table, res.manifests, out.name)
        index = getattr(res, "index", None) or out / "report" / "index.html"
        print(f"report: {index}")
        print(f"summary: {out / 'report' / 'summary.csv'}")
    print(f"{len(outcomes) - len(failed) - len(pending)}/{len(outcomes)} trials done, {len(failed)} failed"
          + (f", {len(pending)} left for the next run (the same command resumes)" if pending else "")
          + f"; bundles in {', '.join(map(str, roots))}")
    for o in failed:
        print(f"trial {o.trial}: {o.reason[:500]}", file=sys.stderr)
    return 1 if failed else 0


HUB_MIN_RTT_MS = 40.0
"""Below this RTT a WAN stays a mesh under ``auto``: through a hub a pair crosses two shaped hops each way
instead of one, ~0.3 ms more per hop with wirefilter — more than the lab's tolerance (max(1 ms, 5 %))
allows below 40 ms."""


def group_layout(group: list[TrialPlan], prefer: str) -> str:
    """The layout a deployment is wired with: one that every trial on it can be re-shaped to (auto: the
    fewest links for the first trial, unless another trial needs other hubs or direct pairs, or some pair's
    RTT is below :data:`HUB_MIN_RTT_MS`: then mesh)."""
    if prefer != "auto":
        return prefer
    first = group[0]
    if any(0 < p.links[(a, b)].delay_ms + p.links[(b, a)].delay_ms < HUB_MIN_RTT_MS
           for p in group for (a, b) in p.links if a != b):
        return "mesh"
    groups = {r.name: r.group for r in first.regions}

    def layout_of(p: TrialPlan, kind: str = "auto") -> Layout:
        full = {(a, b): p.links.get((a, b), OneWay()) for a in p.region_names for b in p.region_names if a != b}
        return plan_layout(full, p.region_names, groups, prefer=kind)

    kind = layout_of(first).kind
    try:
        same = all(layout_of(p, kind).structure() == layout_of(first, kind).structure() for p in group[1:])
    except ValueError:  # another trial's links cannot be given through these hubs
        same = False
    return kind if same else "mesh"


def trial_layouts(groups: list[list[TrialPlan]], prefer: str) -> dict[tuple[str, str], str]:
    """(Benchmark, trial) → the layout of the deployment its group shares: every trial of a group, since the
    one that deploys is the first not yet complete (a resumed run), and by Benchmark too, since a campaign's
    Benchmarks have the same trial ids (keyed by trial alone, a 45-region deployment got a 3-region
    group's mesh: 990 links)."""
    return {(p.benchmark, p.id): kind for g in groups for kind in [group_layout(g, prefer)] for p in g}


def run(trials: list[TrialPlan], out_dir: str, shaper: str = "auto", report: bool = True, fresh: bool = False,
        gate: QuietGate | None = None, layout: str = "auto", stop_after_s: float | None = None,
        done: list[str] | None = None) -> int:
    """Run the planned trials for real on this machine, in their run order (``spec.matrix.order``),
    each load released once the machine is quiet (``gate``); bundles and the report under ``out_dir``.
    ``stop_after_s``: start no new deployment after that long; the trials left wait for the next run
    with the same ``out_dir``, which skips every trial whose bundles are complete (a campaign in sittings).
    ``done``: data sets (``wanwide results export``) whose trials are skipped too (a campaign resumed where
    its earlier bundles are not); one holding a trial under other parameters is an error before anything runs."""
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    missing = [m for m in paths.missing() if "versitygw" not in m]  # S3 is optional here
    if missing:
        print("error: the lab needs: " + ", ".join(missing) + " — run hack/install-lab.sh", file=sys.stderr)
        return 2
    problems = check_results(trials)
    try:
        earlier = earlier_runs([Path(d) for d in done or []])
    except ValueError as e:
        problems.append(str(e))
        earlier = {}
    problems += earlier_mismatches(earlier, trials)
    if problems:
        print("error: " + "\n       ".join(problems), file=sys.stderr)
        return 2
    groups = deployments(trials, fresh)  # the order they run in, and which share a deployment
    trials = [p for g in groups for p in g]
    runner = LabRun(out, Live(len(trials), log=out / "lab.log"), shaper, gate=gate, layout=layout)
    runner.layouts = trial_layouts(groups, layout)
    runner.earlier = earlier
    outcomes: list[TrialOutcome] = []

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_signal)
    # Also when started in the background, where the shell leaves SIGINT ignored.
    old_int = signal.signal(signal.SIGINT, on_signal)
    position = {id(p): i for i, p in enumerate(trials)}
    deadline = None if stop_after_s is None else time.monotonic() + stop_after_s
    try:
        for group in groups:
            if deadline is not None and time.monotonic() >= deadline:
                outcomes += [_left(runner, p, position) for p in group]
                continue
            _group(runner, group, position, outcomes)
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        ended = {(o.benchmark, o.trial) for o in outcomes}
        outcomes += [TrialOutcome(p.benchmark, p.id, "skipped") if done_why(runner, p) else
                     TrialOutcome(p.benchmark, p.id, "pending", "the run was interrupted before it ended")
                     for p in trials if (p.benchmark, p.id) not in ended]
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
        write_trials(out / "trials.json", outcomes)
    return _summary(out, trials, outcomes, report)


def _left(runner: LabRun, p: TrialPlan, position: dict[int, int]) -> TrialOutcome:
    """A trial the deadline left for the next run (unless it is done already)."""
    if done_why(runner, p):
        return TrialOutcome(p.benchmark, p.id, "skipped")
    runner.live.say(position[id(p)], p, "Pending", "--stop-after reached: left for the next run")
    return TrialOutcome(p.benchmark, p.id, "pending", "--stop-after reached before its deployment started")


def write_trials(path: Path, outcomes: list[TrialOutcome]) -> None:
    """``trials.json``: this run's outcomes; a trial skipped (complete from an earlier run) keeps what the
    earlier run recorded of it (its bundles, its network check)."""
    earlier: dict[tuple, dict] = {}
    if path.is_file():
        try:  # by Benchmark and trial: a campaign's Benchmarks have the same trial ids
            earlier = {(t.get("benchmark"), t["trial"]): t for t in json.loads(path.read_text())}
        except (ValueError, KeyError, TypeError, AttributeError):
            earlier = {}
    rows = [earlier.get((o.benchmark, o.trial), o.__dict__) if o.result == "skipped" else o.__dict__ for o in outcomes]
    path.write_text(json.dumps(rows, indent=1))


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
