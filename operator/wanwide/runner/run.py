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
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import wanwide
from wanwide.runner import gauges
from wanwide.runner.bundle import (
    RALLY_JSON,
    DatabaseInfo,
    HostInfo,
    KeystoneInfo,
    Manifest,
    NetworkInfo,
    RallyInfo,
    StartInfo,
    Status,
    TrialInfo,
    bundle_relpath,
    new_run_id,
    write_manifest,
)
from wanwide.runner.config import RunnerConfig
from wanwide.runner.rally import ProgressCounter, Rally, RallyError, find_rally, rally_versions
from wanwide.runner.upload import (
    CredentialsMissing,
    UploadError,
    credentials,
    join_key,
    upload_bundle,
)
from wanwide.runner.users import KeystoneError, ensure_user

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_CONFIG = 2
EXIT_UPLOAD = 3


class StartTooLate(RuntimeError):
    pass


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(t: datetime | None) -> str | None:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z") if t else None


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
            "synchronised with the other regions"
        )


RELEASE = threading.Event()  # set by SIGUSR1: a coordinator releases every waiting runner at once


def _on_release(_signum: int, _frame: object) -> None:
    RELEASE.set()


def wait_until(start: datetime, report_every_s: float = 10.0) -> datetime:
    """Wait for ``start`` (or an earlier SIGUSR1 release); returns the instant the wait ended for."""
    last = 0.0
    while True:
        if RELEASE.is_set():
            _say("released by the coordinator (SIGUSR1)")
            return now_utc()
        left = (start - now_utc()).total_seconds()
        if left <= 0:
            return start
        if time.monotonic() - last >= report_every_s or left < 0.5:
            _say(f"waiting for start_at {iso(start)}: {left:.1f}s to go")
            last = time.monotonic()
        RELEASE.wait(min(left, 0.2, report_every_s))


def _expected_iterations(task: dict) -> int | None:
    total = 0
    for st in task.get("subtasks", []):
        for wl in st.get("workloads", [st]):
            runner = wl.get("runner") or {}
            for _kind, args in runner.items():
                if isinstance(args, dict) and isinstance(args.get("times"), int):
                    total += args["times"]
    return total or None


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
        info.iterations, info.failed_iterations = it, failed
    return info


def run(cfg: RunnerConfig, *, run_id: str | None = None, task_timeout_s: float = 6 * 3600) -> RunOutcome:
    with contextlib.suppress(ValueError):  # only the main thread may install handlers
        signal.signal(signal.SIGUSR1, _on_release)
    return _run(cfg, run_id=run_id, task_timeout_s=task_timeout_s)


def _run(cfg: RunnerConfig, *, run_id: str | None = None, task_timeout_s: float = 6 * 3600) -> RunOutcome:
    """Do one run; never raises for run failures, returns the outcome with an exit code."""
    run_id = run_id or new_run_id()
    rel = bundle_relpath(cfg.benchmark, cfg.trial.id, cfg.region, cfg.attempt, run_id)
    bundle_dir = Path(cfg.results.local_dir) / rel
    bundle_dir.mkdir(parents=True, exist_ok=False)
    logs = bundle_dir / "logs"
    logs.mkdir()
    work = Path(cfg.results.local_dir) / ".work" / run_id
    (bundle_dir / "task.json").write_text(json.dumps(cfg.task, indent=2) + "\n")
    _say(f"run {run_id}: bundle {bundle_dir}")

    versions = {"wanwide": wanwide.__version__, **cfg.versions}
    start_info = StartInfo(scheduled=cfg.start_at and iso(cfg.start_time()), max_skew_s=cfg.max_start_skew_s)
    db_info = DatabaseInfo(
        backend=cfg.gauges.database.backend if cfg.gauges.database else None,
        host=cfg.gauges.database.host if cfg.gauges.database else None,
    )
    host = gauges.host_info()
    host_info = HostInfo(hostname=host["hostname"], cpu_count=host["cpu_count"], loadavg_before=host["loadavg"])
    network = NetworkInfo(requested=[link.model_dump() for link in cfg.network_requested])
    rally_info = RallyInfo()
    rally_user: str | None = None
    status = Status(result="failed", reason="InternalError", message="run did not finish")

    def manifest() -> Manifest:
        return Manifest(
            benchmark=cfg.benchmark, namespace=cfg.namespace,
            trial=TrialInfo(**cfg.trial.model_dump()), region=cfg.region, role=cfg.role,
            attempt=cfg.attempt, run_id=run_id, scenarios=cfg.scenarios(), versions=versions,
            deployment=cfg.deployment,
            keystone=KeystoneInfo(url=cfg.keystone.url, region_name=cfg.keystone.region_name,
                                  cache=cfg.keystone.cache, rally_user=rally_user),
            start=start_info, end=iso(now_utc()), network=network, database=db_info,
            host=host_info, rally=rally_info, status=status,
        )

    try:
        check_start(cfg, now_utc())
        exe = find_rally()
        versions.update({k: v for k, v in rally_versions(exe).items() if k in ("rally", "rally-openstack")})
        password = os.environ.get(cfg.keystone.password_env)
        if password is None:
            raise RallyError(f"Keystone password missing: set environment variable {cfg.keystone.password_env}")
        rally = Rally(exe=exe, workdir=work, logdir=logs)
        _say(f"rally {exe}: creating database, environment for {cfg.keystone.url} ({cfg.keystone.region_name})")
        try:
            rally.db_create()
            users = []
            if cfg.keystone.rally_user:
                users = [ensure_user(cfg.keystone, password, f"wanwide-rally-{cfg.region}")]
                rally_user = users[0]["username"]
                _say(f"user {rally_user} for Rally's users context (Rally makes none per subtask)")
            rally.env_create(cfg.keystone, password, users=users)
            rally.env_check()
        except KeystoneError as e:
            status = Status(result="failed", reason="RallySetupFailed",
                            message=f"preparing the user for Rally's users context: {e} "
                                    "(or set spec.runner.rallyUsers: PerSubtask to let Rally make its own)")
            raise RallyError(str(e)) from None
        except RallyError as e:
            status = Status(result="failed", reason="RallySetupFailed", message=str(e))
            raise
        task_file = work / "task.json"
        task_file.write_text(json.dumps(cfg.task, indent=2))

        if cfg.gauges.rtt_targets and cfg.gauges.samples:
            _say(f"measuring RTT to {len(cfg.gauges.rtt_targets)} target(s), {cfg.gauges.samples} samples each")
            network.measured = gauges.measure_rtt(cfg.region, cfg.gauges.rtt_targets, cfg.gauges.samples)
            for m in network.measured:
                _say(f"  rtt {m['src']}→{m['dst']} ({m['kind']} {m['host']}:{m['port']}): "
                     f"median {m['median_ms']} ms, p95 {m['p95_ms']} ms, {m['errors']} error(s)")
        before = None
        if cfg.gauges.database:
            try:
                before = gauges.read_db_counters(cfg.gauges.database)
            except Exception as e:
                db_info.error = str(e)
                _say(f"database gauge: {e}")

        start = cfg.start_time()
        if start is not None:
            check_start(cfg, now_utc())
            start = wait_until(start)
            start_info.scheduled = iso(start)
        actual = now_utc()
        start_info.actual = iso(actual)
        if start is not None:
            start_info.skew_s = round((actual - start).total_seconds(), 3)
            check_start(cfg, actual)
        _say(f"starting rally task at {start_info.actual}" +
             (f" (skew {start_info.skew_s:+.3f}s)" if start_info.skew_s is not None else ""))
        progress = ProgressCounter("rally task", _expected_iterations(cfg.task))
        uuid, rc = rally.task_start(task_file, tag=f"wanwide-{run_id}", timeout=task_timeout_s, on_line=progress)
        progress.print()
        rally_info.task_uuid, rally_info.exit_code = uuid, rc
        if cfg.gauges.database and before is not None:
            try:
                after = gauges.read_db_counters(cfg.gauges.database)
                d = gauges.diff_counters(before, after)
                db_info.reads, db_info.writes = d["reads"], d["writes"]
                db_info.read_pct, db_info.write_pct = d["read_pct"], d["write_pct"]
                db_info.counters = d["counters"]
            except Exception as e:
                db_info.error = str(e)
                _say(f"database gauge: {e}")
        if uuid is None:
            status = Status(result="failed", reason="RallyTaskFailed",
                            message=f"rally task start exited {rc} and created no task (see logs/)")
        else:
            try:
                rally.task_report_json(uuid, bundle_dir / RALLY_JSON)
            except RallyError as e:
                status = Status(result="failed", reason="ExportFailed", message=str(e))
            else:
                summary = _summarise_rally_json(bundle_dir / RALLY_JSON)
                summary.task_uuid, summary.exit_code = uuid, rc
                rally_info = summary
                if summary.task_status not in ("finished", "sla_failed"):
                    status = Status(result="failed", reason="RallyTaskFailed",
                                    message=f"rally task {uuid} ended in status {summary.task_status} (exit {rc})")
                elif summary.pass_sla is False:
                    status = Status(result="succeeded", reason="SLAFailed",
                                    message=f"{summary.failed_iterations} of {summary.iterations} iterations failed; "
                                            "results exported")
                else:
                    status = Status(result="succeeded", reason="Completed",
                                    message=f"{summary.iterations} iterations, {summary.failed_iterations} failed")
    except StartTooLate as e:
        status = Status(result="failed", reason="StartTooLate", message=str(e))
    except RallyError as e:
        if status.reason == "InternalError":
            reason = "RallyNotFound" if "not found" in str(e) else "RallySetupFailed"
            status = Status(result="failed", reason=reason, message=str(e))
    except KeyboardInterrupt:
        status = Status(result="failed", reason="Interrupted", message="interrupted")
    except Exception as e:
        status = Status(result="failed", reason="InternalError", message=f"{type(e).__name__}: {e}")
        (logs / "runner-traceback.txt").write_text(traceback.format_exc())

    with contextlib.suppress(OSError):
        host_info.loadavg_after = list(os.getloadavg())
    m = manifest()
    write_manifest(bundle_dir, m)
    shutil.rmtree(work, ignore_errors=True)
    _say(f"status {status.result} ({status.reason}): {status.message}")
    code = EXIT_OK if status.result == "succeeded" else EXIT_RUN_FAILED

    keys: list[str] = []
    message = status.message
    if cfg.results.s3:
        try:
            keys = upload_bundle(bundle_dir, cfg.results.s3, rel)
            _say(f"uploaded {len(keys)} file(s) to {cfg.results.s3.endpoint} bucket {cfg.results.s3.bucket} "
                 f"under {join_key(cfg.results.s3.prefix, rel)}/")
        except UploadError as e:
            _say(f"ERROR: {e}")
            message = str(e)
            code = EXIT_UPLOAD
    else:
        _say(f"no S3 target configured: bundle only in {bundle_dir}")
    return RunOutcome(code, bundle_dir, m, keys, message)


def run_from_config(cfg: RunnerConfig, **kw) -> RunOutcome | int:
    """Fail fast on what cannot be fixed by running (credentials), then run."""
    if cfg.results.s3:
        try:
            credentials(cfg.results.s3)
        except CredentialsMissing as e:
            _say(f"ERROR: {e}")
            return EXIT_CONFIG
    return run(cfg, **kw)
