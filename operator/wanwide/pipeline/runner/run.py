"""``wanwide runner run``: one Rally run in one region, written as a result bundle.

Steps: check credentials and start time → Rally db/env/check → RTT and DB gauges →
wait for ``start_at`` → ``rally task start`` → gauges again → ``rally task report
--json`` (also when the SLA fails) → manifest.json → upload (local copy always kept).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from wanwide import __version__
from wanwide.core import timestamps as ts
from wanwide.core.contracts import (
    EXIT_CONFIG,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_UPLOAD,
    TINY_IMAGE_BYTES,
    TINY_IMAGE_FILE,
    RunnerConfig,
)
from wanwide.core.errors import PermanentError
from wanwide.pipeline.runner import catalog, contention, gauges, members, netwatch, pairwatch, slo
from wanwide.pipeline.runner.bundle import (
    RALLY_JSON,
    ContentionInfo,
    DatabaseInfo,
    GateInfo,
    HostInfo,
    KeystoneInfo,
    Manifest,
    NetworkInfo,
    RallyInfo,
    StartInfo,
    Status,
    TrialInfo,
    WarmupInfo,
    bundle_relpath,
    new_run_id,
    write_manifest,
)
from wanwide.pipeline.runner.images import SharedImages
from wanwide.pipeline.runner.rally import (
    ProgressCounter,
    Rally,
    RallyError,
    find_rally,
    rally_versions,
)
from wanwide.pipeline.runner.upload import (
    CredentialsMissing,
    UploadError,
    credentials,
    join_key,
    upload_bundle,
)
from wanwide.pipeline.runner.users import KeystoneError, ensure_user


class StartTooLate(PermanentError, RuntimeError):
    """The runner would start after the common start: ``late_s``, how far past it (None: no start instant)."""

    def __init__(self, message: str, late_s: float | None = None) -> None:
        super().__init__(message)
        self.late_s = late_s


def iso(t: datetime | None) -> str | None:
    """Times in the bundle keep microseconds (start skews are sub-second)."""
    return ts.iso(t, precise=True)


@dataclass
class RunOutcome:
    exit_code: int
    bundle_dir: Path
    manifest: Manifest
    uploaded_keys: list[str]
    message: str


def _say(msg: str) -> None:
    print(f"[runner] {msg}", file=sys.stderr, flush=True)


def check_start(cfg: RunnerConfig, now: datetime) -> None:
    start = cfg.start_time()
    if start is None:
        return
    late = (now - start).total_seconds()
    if late > cfg.max_start_skew_s:
        raise StartTooLate(
            f"start_at {iso(start)} is already {late:.1f}s in the past at {iso(now)}, more than "
            f"max_start_skew_s={cfg.max_start_skew_s:g}: refusing to start a run that would not be "
            "synchronised with the other regions (preparation and warm-up took longer than "
            "spec.workload.startDelay: raise it)",
            late_s=late,
        )


RELEASE = threading.Event()  # set by SIGUSR1: a coordinator releases every waiting runner at once


def _on_release(_signum: int, _frame: object) -> None:
    RELEASE.set()


READY = "ready:"  # the line a coordinator waits for: "[runner] ready: …"


def wait_until(start: datetime, report_every_s: float = 10.0) -> datetime:
    """Wait for ``start``; returns ``start`` (the instant every runner was told to start at)."""
    _say(f"{READY} prepared; starting at start_at {iso(start)} "
         f"({(start - ts.now()).total_seconds():.1f}s to go)")
    last = time.monotonic()
    while True:
        left = (start - ts.now()).total_seconds()
        if left <= 0:
            return start
        if time.monotonic() - last >= report_every_s:
            _say(f"waiting for start_at {iso(start)}: {left:.1f}s to go")
            last = time.monotonic()
        time.sleep(min(left, 0.2))


def wait_release(release_file: Path, timeout_s: float, report_every_s: float = 60.0) -> dict:
    """Wait for the coordinator's SIGUSR1; returns what it wrote to ``release_file`` beforehand
    (``released_at`` and its gate). Raises StartTooLate if no release comes within ``timeout_s``."""
    _say(f"{READY} prepared; waiting for the coordinator to release every runner together "
         f"(SIGUSR1; at most {timeout_s:.0f}s)")
    t0 = time.monotonic()
    while not RELEASE.wait(min(report_every_s, 1.0)):
        waited = time.monotonic() - t0
        if waited > timeout_s:
            raise StartTooLate(f"not released by the coordinator within {timeout_s:.0f}s")
    try:
        info = json.loads(release_file.read_text())
        ts.parse(info["released_at"])
    except (OSError, ValueError, KeyError) as e:
        raise StartTooLate(f"released without a valid release file {release_file}: {e}") from None
    _say(f"released by the coordinator at {info['released_at']}")
    return info


def _expected_iterations(task: dict) -> int | None:
    total = 0
    for st in task.get("subtasks", []):
        for wl in st.get("workloads", [st]):
            runner = wl.get("runner") or {}
            for _kind, args in runner.items():
                if isinstance(args, dict) and isinstance(args.get("times"), int):
                    total += args["times"]
    return total or None


def scenario_windows(report: dict) -> dict[str, tuple[float, float, int]]:
    """Per scenario (subtask title) of a ``rally task report --json``: the first iteration's start, the last
    one's end (epoch seconds) and the iterations run."""
    out: dict[str, tuple[float, float, int]] = {}
    for st in ((report.get("tasks") or [{}])[0].get("subtasks") or []):
        its = [d for wl in st.get("workloads") or [] for d in wl.get("data") or [] if d.get("timestamp") is not None]
        if its:
            out[str(st.get("title"))] = (min(float(d["timestamp"]) for d in its),
                                         max(float(d["timestamp"]) + float(d.get("duration") or 0) for d in its), len(its))
    return out


def _record_cpu_per_scenario(r: _Run) -> None:
    """CPU per iteration of each scenario, from the series sampled over the task (contention.cpu_per_scenario)."""
    if r.contention is None or not r.cpu_series:
        return
    windows = scenario_windows(json.loads((r.bundle_dir / RALLY_JSON).read_text()))
    r.contention.scenarios = contention.cpu_per_scenario(r.cpu_series, windows) or None
    for name, x in (r.contention.scenarios or {}).items():
        _say(f"cpu {name.split('.')[-1]}: {x['cpu_s_per_iteration']} CPU-s per iteration "
             f"({x['own_cpu_s'] if x['own_cpu_s'] is not None else x['busy_cpu_s']} s over {x['iterations']} iterations)")


RUNNER_SET = ("openstack_options", "images", "catalog_added")
"""The bundle's ``rally`` fields the runner sets before the task (the rest: :func:`_summarise_rally_json` and the
task's exit), carried over when the summary replaces them (a field left out here was lost: stop 60's
``catalog_added``)."""


def _summarise_rally_json(path: Path) -> RallyInfo:
    data = json.loads(path.read_text())
    info = RallyInfo()
    tasks = data.get("tasks") or []
    if tasks:
        t = tasks[0]
        info.task_status = t.get("status")
        info.pass_sla = t.get("pass_sla")
        it = failed = 0
        for st in t.get("subtasks") or []:
            for wl in st.get("workloads") or []:
                it += int(wl.get("total_iteration_count") or len(wl.get("data") or []))
                failed += int(wl.get("failed_iteration_count") or 0)
                info.errors += [f"{st.get('title') or wl.get('name')}: {c.get('detail')}"[:500]
                                for c in (wl.get("sla_results") or {}).get("sla") or []
                                if c.get("criterion") == "something_went_wrong" and c.get("success") is False]
        info.iterations, info.failed_iterations = it, failed
    return info


def run(cfg: RunnerConfig, *, run_id: str | None = None, task_timeout_s: float = 6 * 3600,
        metrics_port: int = 0) -> RunOutcome:
    """One run; ``metrics_port``: serve the live metrics (pipeline/runner/live.py) there while it runs."""
    with contextlib.suppress(ValueError):  # only the main thread may install handlers
        signal.signal(signal.SIGUSR1, _on_release)
    return _run(cfg, run_id=run_id, task_timeout_s=task_timeout_s, metrics_port=metrics_port)


def _live(cfg: RunnerConfig, port: int) -> Any:
    """The live metrics served on ``port`` (None when 0, or when the port cannot be had: said, not fatal)."""
    if not port:
        return None
    from wanwide.pipeline.runner import live

    labels = {"bench_namespace": cfg.namespace, "benchmark": cfg.benchmark, "trial": cfg.trial.id,
              "region": cfg.region}
    lv = live.Live(labels, cfg.task, cfg.faults)
    try:
        live.serve(lv.reg, port)
    except OSError as e:
        _say(f"live metrics: port {port}: {e}; running without them")
        return None
    _say(f"live metrics on :{port}/metrics")
    return lv


@dataclass
class _Run:
    """One run as it goes: where its bundle is and the manifest's parts, filled in step by step."""

    cfg: RunnerConfig
    run_id: str
    rel: str  # bundle path below results.local_dir and the S3 prefix
    bundle_dir: Path
    logs: Path
    work: Path  # Rally's private state; removed at the end
    versions: dict[str, str]
    start_info: StartInfo
    db_info: DatabaseInfo
    host_info: HostInfo
    network: NetworkInfo
    rally_info: RallyInfo = field(default_factory=RallyInfo)
    rally_user: str | None = None
    contention: ContentionInfo | None = None
    warmup: WarmupInfo | None = None
    gate: GateInfo | None = None
    slo: list[dict] | None = None
    cpu_series: list[contention.CpuSample] = field(default_factory=list)  # over the measured task, every second
    live: Any = None  # live.Live when the runner serves metrics (--metrics-port)
    status: Status = field(
        default_factory=lambda: Status(result="failed", reason="InternalError", message="run did not finish"))

    def manifest(self) -> Manifest:
        """The manifest as of now (``end`` = now)."""
        cfg = self.cfg
        return Manifest(
            benchmark=cfg.benchmark, namespace=cfg.namespace,
            trial=TrialInfo(**cfg.trial.model_dump()), region=cfg.region, role=cfg.role,
            attempt=cfg.attempt, run_id=self.run_id, scenarios=cfg.scenarios(), versions=self.versions,
            deployment=cfg.deployment,
            keystone=KeystoneInfo(url=cfg.keystone.url, region_name=cfg.keystone.region_name,
                                  cache=cfg.keystone.cache, rally_user=self.rally_user),
            start=self.start_info, end=iso(ts.now()), network=self.network, database=self.db_info,
            host=self.host_info, contention=self.contention, warmup=self.warmup, rally=self.rally_info,
            slo=self.slo, status=self.status,
        )


def _new_run(cfg: RunnerConfig, run_id: str) -> _Run:
    """Create the bundle directory (logs/, task.json) and the run's initial record."""
    rel = bundle_relpath(cfg.benchmark, cfg.trial.id, cfg.region, cfg.attempt, run_id)
    bundle_dir = Path(cfg.results.local_dir) / rel
    bundle_dir.mkdir(parents=True, exist_ok=False)
    logs = bundle_dir / "logs"
    logs.mkdir()
    work = Path(cfg.results.local_dir) / ".work" / run_id
    (bundle_dir / "task.json").write_text(json.dumps(cfg.task, indent=2) + "\n")
    _say(f"run {run_id}: bundle {bundle_dir}")

    db = cfg.gauges.database
    host = gauges.host_info()
    return _Run(
        cfg=cfg, run_id=run_id, rel=rel, bundle_dir=bundle_dir, logs=logs, work=work,
        versions={"wanwide": __version__, **cfg.versions},
        start_info=StartInfo(barrier="release" if cfg.release else "start_at" if cfg.start_at else "none",
                             scheduled=cfg.start_at and iso(cfg.start_time()), max_skew_s=cfg.max_start_skew_s),
        db_info=DatabaseInfo(backend=db.backend if db else None, host=db.host if db else None),
        host_info=HostInfo(hostname=host["hostname"], cpu_count=host["cpu_count"], loadavg_before=host["loadavg"],
                           cpu_model=host["cpu_model"], boot_id=host["boot_id"]),
        network=NetworkInfo(requested=[link.model_dump() for link in cfg.network_requested], check=cfg.network_check),
    )


def _create_rally_env(r: _Run, rally: Rally, password: str) -> None:
    """Rally's database, the user for its users context (if configured), its environment."""
    rally.db_create()
    users = []
    if r.cfg.keystone.rally_user:
        users = [ensure_user(r.cfg.keystone, password, f"wanwide-rally-{r.cfg.region}")]
        r.rally_user = users[0]["username"]
        _say(f"user {r.rally_user} for Rally's users context (Rally makes none per subtask)")
    rally.env_create(r.cfg.keystone, password, users=users)
    rally.env_check()


def _setup_rally(r: _Run) -> Rally:
    """Find Rally and prepare it; a failed preparation is recorded as RallySetupFailed and raised."""
    cfg = r.cfg
    exe = find_rally()
    r.versions.update({k: v for k, v in rally_versions(exe).items() if k in ("rally", "rally-openstack")})
    password = os.environ.get(cfg.keystone.password_env)
    if password is None:
        raise RallyError(f"Keystone password missing: set environment variable {cfg.keystone.password_env}")
    rally = Rally(exe=exe, workdir=r.work, logdir=r.logs, openstack=dict(cfg.rally_openstack))
    r.rally_info.openstack_options = dict(cfg.rally_openstack) or None
    _say(f"rally {exe}: creating database, environment for {cfg.keystone.url} ({cfg.keystone.region_name})")
    try:
        _create_rally_env(r, rally, password)
    except KeystoneError as e:
        r.status = Status(result="failed", reason="RallySetupFailed",
                          message=f"preparing the user for Rally's users context: {e} "
                                  "(or set spec.runner.rallyUsers: PerSubtask to let Rally make its own)")
        raise RallyError(str(e)) from None
    except RallyError as e:
        r.status = Status(result="failed", reason="RallySetupFailed", message=str(e))
        raise
    return rally


def _measure_rtt(r: _Run) -> None:
    """TCP-connect RTT to every configured target, into the manifest's network.measured."""
    g = r.cfg.gauges
    if not (g.rtt_targets and g.samples):
        return
    _say(f"measuring RTT to {len(g.rtt_targets)} target(s), {g.samples} samples each")
    r.network.measured = gauges.measure_rtt(r.cfg.region, g.rtt_targets, g.samples)
    for m in r.network.measured:
        _say(f"  rtt {m['src']}→{m['dst']} ({m['kind']} {m['host']}:{m['port']}): "
             f"median {m['median_ms']} ms, p95 {m['p95_ms']} ms, {m['lost']} of {m['sent']} lost")


def _db_counters_before(r: _Run) -> dict[str, int] | None:
    """The database's statement counters before the task; None if not gauged or unreadable."""
    if not r.cfg.gauges.database:
        return None
    try:
        return gauges.read_db_counters(r.cfg.gauges.database)
    except Exception as e:
        r.db_info.error = str(e)
        _say(f"database gauge: {e}")
        return None


def _db_counters_after(r: _Run, before: dict[str, int] | None) -> None:
    """Reads and writes during the task (counters after minus ``before``) into the manifest."""
    if not (r.cfg.gauges.database and before is not None):
        return
    try:
        after = gauges.read_db_counters(r.cfg.gauges.database)
        d = gauges.diff_counters(before, after)
        r.db_info.reads, r.db_info.writes = d["reads"], d["writes"]
        r.db_info.read_pct, r.db_info.write_pct = d["read_pct"], d["write_pct"]
        r.db_info.counters = d["counters"]
    except Exception as e:
        r.db_info.error = str(e)
        _say(f"database gauge: {e}")


def _wait_for_start(r: _Run) -> None:
    """Wait for the barrier (start_at, or the coordinator's release), refusing to start too late;
    record the common start instant, the actual start and the skew between them."""
    cfg, info = r.cfg, r.start_info
    t_ready = time.monotonic()
    start: datetime | None = None
    if cfg.release is not None:
        released = wait_release(Path(cfg.release.file), cfg.release.timeout_s)
        start = ts.parse(released["released_at"])
        if released.get("gate"):
            r.gate = GateInfo.model_validate(released["gate"])
    elif cfg.start_time() is not None:
        check_start(cfg, ts.now())
        start = wait_until(cfg.start_time())
    actual = ts.now()
    info.waited_s = round(time.monotonic() - t_ready, 3)
    info.actual = iso(actual)
    if start is not None:
        info.scheduled = iso(start)
        info.skew_s = round((actual - start).total_seconds(), 3)
        late = info.skew_s
        if late > cfg.max_start_skew_s:
            raise StartTooLate(f"started {late:.1f}s after the common start {info.scheduled}, more than "
                               f"max_start_skew_s={cfg.max_start_skew_s:g}: not synchronised with the other regions",
                               late_s=late)
    _say(f"starting rally task at {info.actual}" +
         (f" (skew {info.skew_s:+.3f}s from the common start)" if info.skew_s is not None else ""))


def _start_task(r: _Run, rally: Rally, task_file: Path, task_timeout_s: float) -> tuple[str | None, int]:
    """``rally task start`` with progress lines (and the live metrics); returns (task uuid or None, exit code)."""
    progress = ProgressCounter("rally task", _expected_iterations(r.cfg.task))
    on_line = progress
    if r.live is not None:
        start = r.start_info.scheduled or r.start_info.actual
        r.live.run(ts.parse(start).timestamp() if start else time.time())

        def on_line(line: str) -> None:
            progress(line)
            r.live(line)
    try:
        uuid, rc = rally.task_start(task_file, tag=f"wanwide-{r.run_id}", timeout=task_timeout_s, on_line=on_line)
    finally:
        if r.live is not None:
            r.live.stop()
    progress.print()
    r.rally_info.task_uuid, r.rally_info.exit_code = uuid, rc
    return uuid, rc


def _task_status(summary: RallyInfo, uuid: str, rc: int, missed: list[str] | None = None) -> Status:
    """The run's status from the exported task: failed, SLA failed (data valid: an objective missed) or
    completed."""
    if summary.task_status not in ("finished", "sla_failed"):
        return Status(result="failed", reason="RallyTaskFailed",
                      message=f"rally task {uuid} ended in status {summary.task_status} (exit {rc})")
    if summary.errors:  # the workload stopped before or instead of its iterations: nothing measured to keep
        more = f" (and {len(summary.errors) - 1} more)" if len(summary.errors) > 1 else ""
        return Status(result="failed", reason="RallyWorkloadError",
                      message=f"rally task {uuid}: {summary.errors[0]}{more}")
    if missed:
        return Status(result="succeeded", reason="SLAFailed",
                      message=f"objectives missed: {'; '.join(missed)}; results exported")
    if summary.pass_sla is False:
        return Status(result="succeeded", reason="SLAFailed",
                      message=f"{summary.failed_iterations} of {summary.iterations} iterations failed; "
                              "results exported")
    return Status(result="succeeded", reason="Completed",
                  message=f"{summary.iterations} iterations, {summary.failed_iterations} failed")


def _export(r: _Run, rally: Rally, uuid: str | None, rc: int) -> None:
    """rally.json (``rally task report --json``, also when the SLA failed) and the run's status."""
    if uuid is None:
        r.status = Status(result="failed", reason="RallyTaskFailed",
                          message=f"rally task start exited {rc} and created no task (see logs/)")
        return
    try:
        rally.task_report_json(uuid, r.bundle_dir / RALLY_JSON)
    except RallyError as e:
        r.status = Status(result="failed", reason="ExportFailed", message=str(e))
        return
    summary = _summarise_rally_json(r.bundle_dir / RALLY_JSON)
    summary.task_uuid, summary.exit_code = uuid, rc
    for k in RUNNER_SET:  # what the runner learned before the task; rally.json knows none of it
        setattr(summary, k, getattr(r.rally_info, k))
    r.rally_info = summary
    _record_cpu_per_scenario(r)
    missed: list[str] = []
    if r.cfg.slo:
        r.slo = slo.check(json.loads((r.bundle_dir / RALLY_JSON).read_text()), r.cfg.slo)
        missed = slo.missed(r.slo)
        for row in r.slo:
            _say(f"slo {row['scenario'].split('.')[-1]} {row['criterion']}: "
                 f"{'met' if row['passed'] else 'MISSED' if row['passed'] is False else 'not measured'} ({row['detail']})")
    r.status = _task_status(summary, uuid, rc, missed)


def write_task(task: dict[str, Any], path: Path) -> None:
    """Write a Rally task and what it reads beside it: the tiny image its Nova and Glance scenarios upload
    (core/contracts.py ``TINY_IMAGE_FILE``: zeros, a raw disk nothing boots for real), in Rally's working
    directory, where the task names it."""
    text = json.dumps(task, indent=2)
    path.write_text(text)
    image = path.parent / TINY_IMAGE_FILE
    if f'"{TINY_IMAGE_FILE}"' in text and not image.exists():
        image.write_bytes(bytes(TINY_IMAGE_BYTES))


def _warmup(r: _Run, rally: Rally, task_timeout_s: float) -> None:
    """The unmeasured warm-up task (a new deployment's first run): report in logs/warmup.json."""
    task = r.cfg.warmup_task
    if not task:
        return
    _say(f"warm-up: {_expected_iterations(task) or '?'} iteration(s), not measured")
    task_file = r.work / "warmup.json"
    write_task(task, task_file)
    t0 = time.monotonic()
    progress = ProgressCounter("warm-up", _expected_iterations(task))
    try:  # a failing warm-up is recorded; the measured task says whether the deployment works
        uuid, rc = rally.task_start(task_file, tag=f"wanwide-warmup-{r.run_id}", timeout=task_timeout_s,
                                    on_line=progress)
        r.warmup = WarmupInfo(duration_s=round(time.monotonic() - t0, 3), status=f"exit {rc}")
        if uuid is None:
            return
        rally.task_report_json(uuid, r.logs / "warmup.json")
    except RallyError as e:
        _say(f"warm-up: {e}")
        r.warmup = WarmupInfo(duration_s=round(time.monotonic() - t0, 3), status=f"failed: {e}"[:300])
        return
    info = _summarise_rally_json(r.logs / "warmup.json")
    r.warmup = WarmupInfo(iterations=info.iterations, failed_iterations=info.failed_iterations,
                          duration_s=r.warmup.duration_s, status=info.task_status)


def _own(cfg: RunnerConfig) -> contention.OwnProcesses | None:
    """The experiment's processes as the configuration names them (None: not known here)."""
    c = cfg.contention
    if not (c.netns or c.pids):
        return None
    inodes = [i for i in (contention.netns_inode(n) for n in c.netns) if i is not None]
    return contention.OwnProcesses(netns=inodes, pids=list(c.pids))


@contextlib.contextmanager
def _member_watch(r: _Run):
    """Galera: the members watched from the load's start (the common start the fault windows count from)."""
    g = r.cfg.gauges
    if not g.members:
        yield None
        return
    start = r.start_info.scheduled or r.start_info.actual
    t0 = ts.parse(start).timestamp() if start else time.time()
    _say(f"members: watching {len(g.members)} Galera member(s) every {g.members_period_s:g}s")
    password = os.environ.get(g.database.password_env, "") if g.database else None
    with members.Watch(g.members, g.members_period_s, t0, password=password, size=g.members_cluster_size) as watch:
        yield watch


@contextlib.contextmanager
def _network_watch(r: _Run):
    """The RTT targets and Galera members probed through the measured task (pipeline/runner/netwatch.py)."""
    g = r.cfg.gauges
    targets = netwatch.targets_of(g.rtt_targets, g.members)
    if not (g.network_period_s and (targets or g.pairs)):
        yield None
        return
    start = r.start_info.scheduled or r.start_info.actual
    t0 = ts.parse(start).timestamp() if start else time.time()
    between = f" and {len(g.pairs)} pair(s) of regions between themselves" if g.pairs else ""
    _say(f"network: probing {len(targets)} target(s){between} every {g.network_period_s:g}s through the load")
    own = netwatch.Watch(r.cfg.region, targets, g.network_period_s, t0) if targets else None
    with netwatch.Watches(own, g.pairs, g.pairs_coverage, g.network_period_s, t0) as watch:
        yield watch


def _shaper_counters(cfg: RunnerConfig) -> dict[str, Any] | None:
    """The shaper's counters now (``gauges.shaper_counters``: a command printing JSON); None when not configured,
    {"error": why} when it did not answer."""
    argv = cfg.gauges.shaper_counters
    if not argv:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        said = (getattr(e, "stderr", None) or "").strip()[-300:]
        return {"error": f"{' '.join(argv[:3])}…: {type(e).__name__}: {str(e)[:300]}" + (f": {said}" if said else "")}


def _record_network(r: _Run, watch: netwatch.Watches | None, before: dict[str, Any] | None) -> None:
    """The network through the load and the shaper's counters over it, in the manifest; a line per lossy target."""
    if watch is not None:
        r.network.during = watch.document()
        for t in r.network.during["targets"] + r.network.during.get("pairs", []):
            if t.get("error"):
                _say(f"  network during the load {t['src']}→{t['dst']}: not probed ({t['error']})")
            elif t["lost"]:
                _say(f"  network during the load {t['src']}→{t['dst']} ({t['kind']}): {t['lost']} of {t['sent']} "
                     f"probes lost, median {t['median_ms']} ms")
    if before is not None:
        after = _shaper_counters(r.cfg) or {}
        r.network.shaper_counters = {"before": before, "after": after,
                                     "delta": netwatch.counters_delta(before, after)}
        lossy = {k: v for k, v in r.network.shaper_counters["delta"].items() if v.get("lost") or v.get("overflow")
                 or v.get("drops")}
        if lossy:
            _say(f"  shaper over the load: {json.dumps(lossy)}")


def _collect_pair_watches(r: _Run) -> None:
    """Where watch Jobs probed the pairs (``gauges.pair_watches``: Kubernetes), what they stored, in
    ``network.during`` beside the runner's own targets (pipeline/runner/pairwatch.py)."""
    want, s3 = r.cfg.gauges.pair_watches, r.cfg.results.s3
    if want is None or s3 is None:
        return
    _say(f"network: marking the load done; collecting the pairs watched from {len(want.sources)} region(s)")
    try:
        got = pairwatch.collect(s3, r.cfg.benchmark, r.cfg.trial.id, r.cfg.attempt, want, say=_say)
    except Exception as e:  # informational: the load's result stands without it
        got = {"pairs": [], "coverage": {**want.coverage, "error": f"{type(e).__name__}: {str(e)[:300]}"}}
        _say(f"network: the pairs' watches could not be collected: {got['coverage']['error']}")
    during = r.network.during or {"period_s": None, "timeout_s": None, "method": "tcp-connect", "targets": [],
                                  "verdict": "informational (the check before the load decides)"}
    during["pairs"], during["coverage"] = got["pairs"], got["coverage"]
    r.network.during = during
    for t in got["pairs"]:
        if t.get("lost"):
            _say(f"  network during the load {t['src']}→{t['dst']} ({t['kind']}): {t['lost']} of {t['sent']} "
                 f"probes lost, median {t['median_ms']} ms")


def _record_members(r: _Run, watch: members.Watch | None) -> None:
    """members.json in the bundle, its brief in the manifest, a line per fault window in the log."""
    if watch is None:
        return
    doc = watch.document(r.cfg.faults)
    (r.bundle_dir / "members.json").write_text(json.dumps(doc, indent=1) + "\n")
    r.db_info.members = members.brief(doc)
    for w in r.db_info.members["windows"]:
        healed = "not whole again while watched" if w["healed_after_s"] is None else \
            f"whole again {w['healed_after_s']:g}s after it"
        if w["answered_after_s"] is not None:
            healed = f"every member answering {w['answered_after_s']:g}s after it, {healed}"
        _say(f"members: {w['name']}#{w['occurrence']} [{w['start_s']:g}s, {w['end_s']:g}s): "
             f"non-Primary {w['not_primary'] or 'none'}, unreachable {w['unreachable'] or 'none'}, "
             f"restarted {w['restarted'] or 'none'}; "
             f"{healed}")


def _measured_task(r: _Run, rally: Rally, task_file: Path, task_timeout_s: float) -> tuple[str | None, int]:
    """The measured task, with the machine's contention recorded over exactly its window."""
    own = _own(r.cfg)
    before = contention.snapshot(own)
    counters = _shaper_counters(r.cfg)
    with _member_watch(r) as watch:
        with _network_watch(r) as net, contention.Sampler(own=own) as sampler:
            uuid, rc = _start_task(r, rally, task_file, task_timeout_s)
        after = contention.snapshot(own)
        _record_network(r, net, counters)
        _collect_pair_watches(r)
        if watch is not None:
            watch.linger(r.cfg.faults, r.cfg.gauges.members_linger_s, say=_say)
    _record_members(r, watch)
    r.contention = ContentionInfo(**contention.window(before, after), **sampler.figures(), gate=r.gate)
    r.cpu_series = sampler.series
    c = r.contention
    _say(f"contention over the task ({c.window_s:.0f}s): CPU pressure {c.cpu_some_pct}%, "
         f"steal {c.steal_pct}%, CPU used outside the experiment {c.foreign_cpu_pct}%")
    return uuid, rc


def _execute(r: _Run, task_timeout_s: float) -> None:
    """The run proper, step by step; each step records what it learns in ``r``."""
    check_start(r.cfg, ts.now())
    _catalog(r)
    rally = _setup_rally(r)
    with _shared_images(r):
        _warmup(r, rally, task_timeout_s)
        task_file = r.work / "task.json"
        write_task(r.cfg.task, task_file)
        _measure_rtt(r)
        before = _db_counters_before(r)
        _wait_for_start(r)
        uuid, rc = _measured_task(r, rally, task_file, task_timeout_s)
        _db_counters_after(r, before)
        _export(r, rally, uuid, rc)


def _catalog(r: _Run) -> None:
    """The serving control plane's entries under this region's name where missing (pipeline/runner/catalog.py);
    one that cannot be made fails the run as RallySetupFailed."""
    want = r.cfg.catalog
    if want is None:
        return
    try:
        added = catalog.ensure(r.cfg.keystone, os.environ.get(r.cfg.keystone.password_env, ""), want)
    except KeystoneError as e:
        r.status = Status(result="failed", reason="RallySetupFailed",
                          message=f"the catalog of region {r.cfg.region}: {e}")
        raise RallyError(str(e)) from None
    r.rally_info.catalog_added = added
    _say(f"catalog: {len(added)} endpoint(s) of region {want.source}'s control plane registered under "
         f"{r.cfg.region}" if added else f"catalog: region {r.cfg.region} already lists {want.source}'s control plane")


@contextlib.contextmanager
def _shared_images(r: _Run):
    """The public images the config names (the tiny image a region's boots share), made before the tasks and
    deleted after them; one that cannot be made fails the run as RallySetupFailed."""
    if not r.cfg.images:
        yield
        return
    images = SharedImages(r.cfg.keystone, os.environ.get(r.cfg.keystone.password_env, ""))
    try:
        for name in r.cfg.images:
            image_id = images.make(name)
            _say(f"image {name} ({image_id}): public, shared by the boots of every tenant")
    except BaseException as e:  # nothing half-made is left in Glance, whatever stopped it
        for problem in images.delete_all():
            _say(f"WARNING: {problem}")
        if not isinstance(e, KeystoneError):
            raise
        r.status = Status(result="failed", reason="RallySetupFailed",
                          message=f"making the shared image {', '.join(r.cfg.images)}: {e}")
        raise RallyError(str(e)) from None
    r.rally_info.images = dict(images.made)
    try:
        yield
    finally:
        for problem in images.delete_all():
            _say(f"WARNING: {problem}")


def _execute_recording_failures(r: _Run, task_timeout_s: float) -> None:
    """:func:`_execute`, with a failure recorded as the run's status instead of raised."""
    try:
        _execute(r, task_timeout_s)
    except StartTooLate as e:
        r.status = Status(result="failed", reason="StartTooLate", message=str(e))
        if e.late_s is not None:  # what a retry's start must allow more (the operator reads it)
            r.start_info.late_s = round(e.late_s, 3)
            r.start_info.scheduled = r.start_info.scheduled or iso(r.cfg.start_time())
    except RallyError as e:
        if r.status.reason == "InternalError":  # not recorded by the step that failed
            reason = "RallyNotFound" if "not found" in str(e) else "RallySetupFailed"
            r.status = Status(result="failed", reason=reason, message=str(e))
    except KeyboardInterrupt:
        r.status = Status(result="failed", reason="Interrupted", message="interrupted")
    except Exception as e:
        r.status = Status(result="failed", reason="InternalError", message=f"{type(e).__name__}: {e}")
        (r.logs / "runner-traceback.txt").write_text(traceback.format_exc())


def _write_bundle(r: _Run) -> tuple[Manifest, int]:
    """Write manifest.json (last file of the bundle), drop Rally's work dir; the exit code."""
    with contextlib.suppress(OSError):
        r.host_info.loadavg_after = list(os.getloadavg())
    m = r.manifest()
    write_manifest(r.bundle_dir, m)
    shutil.rmtree(r.work, ignore_errors=True)
    _say(f"status {r.status.result} ({r.status.reason}): {r.status.message}")
    return m, EXIT_OK if r.status.result == "succeeded" else EXIT_RUN_FAILED


def _upload(r: _Run, code: int) -> tuple[list[str], str, int]:
    """Upload the bundle when S3 is configured (the local copy stays): (keys, message, exit code)."""
    s3 = r.cfg.results.s3
    keys: list[str] = []
    message = r.status.message
    if s3:
        try:
            keys = upload_bundle(r.bundle_dir, s3, r.rel)
            _say(f"uploaded {len(keys)} file(s) to {s3.endpoint} bucket {s3.bucket} "
                 f"under {join_key(s3.prefix, r.rel)}/")
        except UploadError as e:
            _say(f"ERROR: {e}")
            message = str(e)
            code = EXIT_UPLOAD
    else:
        _say(f"no S3 target configured: bundle only in {r.bundle_dir}")
    return keys, message, code


def _run(cfg: RunnerConfig, *, run_id: str | None = None, task_timeout_s: float = 6 * 3600,
         metrics_port: int = 0) -> RunOutcome:
    """Do one run; never raises for run failures, returns the outcome with an exit code."""
    r = _new_run(cfg, run_id or new_run_id())
    r.live = _live(cfg, metrics_port)
    _execute_recording_failures(r, task_timeout_s)
    m, code = _write_bundle(r)
    keys, message, code = _upload(r, code)
    return RunOutcome(code, r.bundle_dir, m, keys, message)


def run_from_config(cfg: RunnerConfig, **kw) -> RunOutcome | int:
    """Fail fast on what cannot be fixed by running (credentials), then run."""
    if cfg.results.s3:
        try:
            credentials(cfg.results.s3)
        except CredentialsMissing as e:
            _say(f"ERROR: {e}")
            return EXIT_CONFIG
    return run(cfg, **kw)
