"""Result bundle: one immutable, self-describing directory per runner run.

Layout (locally under ``results.local_dir`` and in S3 under ``results.s3.prefix``)::

    <benchmark>/<trial id>/<region>/attempt-<n>-<run id>/
        manifest.json     # schema wanwide.io/bundle/v1 (fields: Manifest below)
        rally.json        # `rally task report --json` (format 1.2), when Rally got that far
        task.json         # the Rally task (format v2) that was run
        members.json      # Galera: every member's wsrep state and uptime through the load (members.py)
        logs/             # output of every rally command, runner.log

``manifest.json`` is written (and uploaded) last: its presence marks a complete bundle.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

SCHEMA = "wanwide.io/bundle/v1"
MANIFEST = "manifest.json"
RALLY_JSON = "rally.json"


class TrialInfo(BaseModel):
    id: str
    index: int
    repetition: int
    parameters: dict[str, Any] = Field(default_factory=dict)
    position: int | None = None  # place in the Benchmark's run order
    seed: int | None = None  # seed of that order


class KeystoneInfo(BaseModel):
    url: str
    region_name: str
    cache: dict[str, Any] = Field(default_factory=dict)
    # the existing user Rally's default users context used (None: Rally made its own)
    rally_user: str | None = None


class StartInfo(BaseModel):
    # "start_at": every runner starts at the configured time (Kubernetes); "release": a
    # coordinator releases the ready runners together (the lab); "none": no barrier
    barrier: Literal["start_at", "release", "none"] | None = None
    scheduled: str | None = None  # the common start instant: start_at, or the coordinator's release
    actual: str | None = None  # when `rally task start` was launched
    skew_s: float | None = None  # actual - scheduled (positive = late), the same meaning for both barriers
    max_skew_s: float | None = None
    waited_s: float | None = None  # from ready (prepared, warmed up) to the start
    late_s: float | None = None  # StartTooLate: how far past the common start the runner was when it refused


class GateInfo(BaseModel):
    """The lab's quiet-machine gate before the release (docs/results.md, "Contention")."""

    enabled: bool = True
    threshold_pct: float | None = None  # CPU pressure (some) and foreign CPU had to stay under it
    settle_s: float | None = None
    max_wait_s: float | None = None
    waited_s: float | None = None
    passed: bool | None = None  # False: the wait ran out and the load started anyway
    own_floor: bool | None = None  # True: passed on the experiment's own level pressure, nothing foreign
    pressure_pct: float | None = None  # CPU pressure over the last settle window at the release
    foreign_cpu_pct: float | None = None  # CPU used outside the experiment over that window


class ContentionInfo(BaseModel):
    """How busy the machine was during the measured window (the Rally task), as percentages of it."""

    source: str = "proc"
    window_s: float | None = None
    psi: bool = False  # the kernel exposes /proc/pressure
    cpu_some_pct: float | None = None  # share of the window some task waited for a CPU
    cpu_some_avg10_max: float | None = None  # highest avg10 sampled every second
    cpu_some_max_interval_pct: float | None = None  # highest pressure over one 1-s interval
    memory_some_pct: float | None = None
    memory_full_pct: float | None = None
    steal_pct: float | None = None  # CPU time the hypervisor gave to others (where reported)
    busy_pct: float | None = None  # machine CPU busy, all processes
    foreign_cpu_pct: float | None = None  # CPU used by processes outside the experiment (lab only)
    busy_cpu_s: float | None = None  # the machine's busy CPU-seconds over the window, every core
    own_cpu_s: float | None = None  # the experiment's processes' CPU-seconds over the window (lab only)
    scenarios: dict[str, dict[str, Any]] | None = None  # per scenario: its window, CPU-seconds, CPU per iteration
    loadavg_before: list[float] | None = None
    loadavg_after: list[float] | None = None
    gate: GateInfo | None = None


class WarmupInfo(BaseModel):
    """The unmeasured task run before the first measured one on a new deployment."""

    iterations: int | None = None
    failed_iterations: int | None = None
    duration_s: float | None = None
    status: str | None = None


class NetworkInfo(BaseModel):
    requested: list[dict[str, Any]] = Field(default_factory=list)  # one-way links
    measured: list[dict[str, Any]] = Field(default_factory=list)  # TCP-connect RTT and loss per target, before
    check: dict[str, Any] = Field(default_factory=dict)  # the network check before the load: rule, pairs
    during: dict[str, Any] | None = None  # every target (and Galera member) sampled through the measured task
    shaper_counters: dict[str, Any] | None = None  # the shaper's own counters: before, after, delta (or why none)


class DatabaseInfo(BaseModel):
    backend: str | None = None
    host: str | None = None
    reads: int | None = None
    writes: int | None = None
    read_pct: float | None = None
    write_pct: float | None = None
    counters: dict[str, Any] | None = None  # before/after/delta of Com_*
    error: str | None = None
    # Galera: the member watch in brief (members.json has every sample): restarts per member, and per
    # fault window which members left the primary component, restarted, and when the cluster was whole
    members: dict[str, Any] | None = None


class HostInfo(BaseModel):
    hostname: str | None = None
    cpu_count: int | None = None
    loadavg_before: list[float] | None = None
    loadavg_after: list[float] | None = None
    cpu_model: str | None = None
    boot_id: str | None = None  # the kernel's: a new machine, or the same one rebooted


class RallyInfo(BaseModel):
    task_uuid: str | None = None
    exit_code: int | None = None
    task_status: str | None = None
    pass_sla: bool | None = None
    iterations: int | None = None
    failed_iterations: int | None = None
    openstack_options: dict[str, float] | None = None  # rally.conf [openstack] in force (spec.workload.pollInterval)
    images: dict[str, str] | None = None  # the shared images the runner made for the tasks: name -> Glance id
    # the serving control plane's catalog entries the runner registered under its region (a stretched plane)
    catalog_added: list[dict[str, Any]] | None = None
    # Rally's own "something went wrong" per workload (a context or an argument that failed: no iteration ran)
    errors: list[str] = Field(default_factory=list)


class Status(BaseModel):
    result: Literal["succeeded", "failed"]
    # Completed | SLAFailed (data valid) | StartTooLate | RallyNotFound | RallySetupFailed
    # | RallyTaskFailed | RallyWorkloadError | ExportFailed | Interrupted | InternalError
    reason: str
    message: str = ""


class Manifest(BaseModel):
    schema_: str = Field(default=SCHEMA, alias="schema")
    benchmark: str
    namespace: str
    trial: TrialInfo
    region: str
    role: str
    attempt: int
    run_id: str
    scenarios: list[str] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    deployment: dict[str, Any] = Field(default_factory=dict)
    keystone: KeystoneInfo
    start: StartInfo = Field(default_factory=StartInfo)
    end: str | None = None
    network: NetworkInfo = Field(default_factory=NetworkInfo)
    database: DatabaseInfo = Field(default_factory=DatabaseInfo)
    host: HostInfo = Field(default_factory=HostInfo)
    contention: ContentionInfo | None = None
    warmup: WarmupInfo | None = None
    rally: RallyInfo = Field(default_factory=RallyInfo)
    # each scenario's objectives as measured (pipeline/runner/slo.py): scenario, criterion, bound, measured,
    # unit, passed, detail; null when the run has no rally.json
    slo: list[dict[str, Any]] | None = None
    status: Status
    files: list[str] = Field(default_factory=list)

    model_config = {"populate_by_name": True}

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, sort_keys=False) + "\n"


def new_run_id(now: datetime | None = None) -> str:
    """Sortable and unique: UTC second + 48 random bits, e.g. ``20261122t101500z-3fa9c2d18e07``."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dt%H%M%Sz") + "-" + secrets.token_hex(6)


def bundle_relpath(benchmark: str, trial_id: str, region: str, attempt: int, run_id: str) -> str:
    return f"{benchmark}/{trial_id}/{region}/attempt-{attempt}-{run_id}"


def list_files(bundle_dir: Path) -> list[str]:
    return sorted(
        p.relative_to(bundle_dir).as_posix() for p in bundle_dir.rglob("*") if p.is_file()
    )


def write_manifest(bundle_dir: Path, manifest: Manifest) -> Path:
    files = [f for f in list_files(bundle_dir) if f != MANIFEST]
    manifest.files = sorted([*files, MANIFEST])
    path = bundle_dir / MANIFEST
    tmp = path.with_suffix(".tmp")
    tmp.write_text(manifest.to_json())
    tmp.replace(path)
    return path


def read_manifest(bundle_dir: Path) -> dict[str, Any]:
    return json.loads((bundle_dir / MANIFEST).read_text())
