"""What crosses between the plan, the runner and the providers, in one place.

- the runner's configuration (``wanwide runner run --config``) and the network probe's
  (``wanwide runner probe``), their exit codes (docs/contracts.md, "Runner configuration");
- where results go: the upload target, from ``spec.results`` (one builder) or an ObjectBucketClaim
  (one reader), and where a probe's result lives;
- the lifecycle's event log entry.

The result bundle's layout and manifest are ``pipeline/runner/bundle.py``'s (``wanwide.io/bundle/v1``).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from wanwide.core.timestamps import parse

Scalar = str | int | float | bool | None

# The runner's exit codes, which the providers read (the Kubernetes provider through its Job's podFailurePolicy)
EXIT_OK = 0
EXIT_RUN_FAILED = 1  # Rally or the runner's set-up failed: the attempt failed
EXIT_CONFIG = 2  # the configuration is not valid
EXIT_UPLOAD = 3  # measured, but the results could not be stored

TINY_IMAGE_FILE = "wanwide-tiny.img"
"""The image the Nova and Glance scenarios of a Rally task boot and upload (core/plan/runner.py renders it into the
task; the runner writes it into Rally's working directory beside the task): :data:`TINY_IMAGE_BYTES` zeros, a raw
disk. Nova's computes are fake: nothing reads it but Glance."""
TINY_IMAGE_BYTES = 64 * 1024
SHARED_IMAGE_NAME = re.compile(r"wanwide-tiny-[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
"""The names of the images a runner makes for its region's boot scenarios (one per region: ``wanwide-tiny-<region>``)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Trial(_Model):
    id: str = Field(min_length=1)
    index: int = Field(ge=0)
    repetition: int = Field(ge=0)
    parameters: dict[str, Scalar] = Field(default_factory=dict)
    position: int | None = Field(None, ge=0, description="Place in the Benchmark's run order.")
    seed: int | None = Field(None, description="Seed the run order was drawn with.")


class KeystoneSettings(_Model):
    url: str
    region_name: str
    username: str = "admin"
    password_env: str = "OS_PASSWORD"
    project_name: str = "admin"
    user_domain_name: str = "Default"
    project_domain_name: str = "Default"
    # A user (project and user wanwide-rally-<region>) made before the task for
    # Rally's default users context, instead of Rally making one per subtask.
    rally_user: bool = True
    # oslo.cache settings as deployed (enabled, backend, memcache_servers, ...):
    # recorded in every bundle because caching decides the result.
    cache: dict[str, Any] = Field(default_factory=dict)


class DatabaseGauge(_Model):
    backend: str  # mariadb | galera | cockroachdb | ...
    host: str
    port: int = 3306
    user: str = "root"
    password_env: str = "WANWIDE_DB_PASSWORD"


class RttTarget(_Model):
    region: str
    kind: Literal["keystone", "database"]
    host: str
    port: int


class MemberTarget(_Model):
    """One Galera member, watched through the load (its own address, not the region's endpoint)."""

    region: str
    host: str
    port: int = 3306


class PairTarget(_Model):
    """A pair of regions probed between themselves during the load: from ``src`` (entered through its network
    namespace ``netns``) to ``dst``'s ``kind`` endpoint."""

    src: str
    dst: str
    kind: Literal["keystone", "database"]
    host: str
    port: int
    netns: str
    rtt_ms: float = Field(0.0, ge=0, description="The round trip the plan asks between the two (both delays).")
    loss_pct: float = Field(0.0, ge=0, le=100, description="The share of round trips the plan's loss drops.")


class PairWatches(_Model):
    """The pairs probed by watch Jobs (:class:`WatchConfig`), one per source region: the load's runner stores a
    mark when its measured task ends (:func:`watch_key` ``done``), each watch then stores its last document, and
    the runner folds them into ``network.during`` (``pairs``, ``coverage``), waiting at most ``wait_s``."""

    sources: list[str] = Field(min_length=1, max_length=128)
    coverage: dict[str, Any]
    wait_s: float = Field(90.0, gt=0, le=3600)


class Gauges(_Model):
    database: DatabaseGauge | None = None
    rtt_targets: list[RttTarget] = Field(default_factory=list)
    samples: int = Field(default=10, ge=0)
    # Galera: every member's wsrep state and uptime sampled through the load (members.json)
    members: list[MemberTarget] = Field(default_factory=list)
    members_period_s: float = Field(default=2.0, gt=0)
    members_cluster_size: int | None = Field(None, ge=1, description="Members in the cluster when not all are watched.")
    # after the load, how long past the last fault window's end the watch waits for the cluster to be whole
    members_linger_s: float = Field(default=0.0, ge=0)
    # during the load: every RTT target and watched member probed once per period (network.during)
    network_period_s: float = Field(default=0.0, ge=0, description="0: not sampled during the load.")
    # …and pairs of regions between themselves (every pair, or a sample: pairs_coverage says which)
    pairs: list[PairTarget] = Field(default_factory=list, max_length=128)
    pairs_coverage: dict[str, Any] | None = None
    # …or, where the runner cannot enter the other regions (Kubernetes), probed by a watch Job in each source
    # region (``wanwide runner watch``) and collected from the results store after the load
    pair_watches: PairWatches | None = None
    # the shaper's own counters: a command printing them as JSON, run before and after the measured task
    shaper_counters: list[str] = Field(default_factory=list)


class FaultSpan(_Model):
    """A fault window as the runner records it: offsets from the load start (a dropout repeats every
    ``every_s``, its first cut at ``start_s + every_s``)."""

    name: str
    kind: Literal["partition", "dropout", "loss"]
    regions: list[str]
    start_s: float = Field(ge=0)
    duration_s: float = Field(gt=0)
    every_s: float | None = Field(None, gt=0)


class SloSpec(_Model):
    """A scenario's objectives as the runner checks them against its iterations (and Rally's SLA holds the
    ones it knows): seconds and percent, None where not asked."""

    scenario: str
    max_s: float | None = Field(None, ge=0)
    mean_s: float | None = Field(None, ge=0)
    percentile: float | None = Field(None, ge=1, le=99.9)
    percentile_max_s: float | None = Field(None, ge=0)
    failure_rate_pct: float = Field(0.0, ge=0, le=100)


class LinkRequested(_Model):
    src: str
    dst: str
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float | None = None


class S3Target(_Model):
    endpoint: str
    bucket: str
    prefix: str = ""
    region: str = "us-east-1"
    access_key_env: str = "AWS_ACCESS_KEY_ID"
    secret_key_env: str = "AWS_SECRET_ACCESS_KEY"
    ambient: bool = Field(False, description="No keys of its own: the AWS SDK's default credential chain (the pod's "
                                            "identity, the environment, a profile).")
    upload_deadline_s: float | None = Field(
        None, gt=0, description="Keep retrying the upload this long (storage down or refusing); "
                                "unset: 5 attempts, a refusal is final.")


class Release(_Model):
    """Start on a coordinator's release instead of at ``start_at`` (the lab): the runner prepares,
    says it is ready, and waits for SIGUSR1; the coordinator first writes ``file`` (JSON:
    ``released_at``, ISO 8601 UTC, and what its quiet-machine gate did), and the skew is then
    measured from ``released_at``, as it is from ``start_at`` otherwise."""

    file: str
    timeout_s: float = Field(3600.0, gt=0, description="Fail (StartTooLate) if not released by then.")


class Contention(_Model):
    """The experiment's own processes, so that the CPU the rest of the machine used during the
    load can be told apart from the experiment's (the lab knows them; a pod does not)."""

    netns: list[str] = Field(default_factory=list, description="Network namespace files (/var/run/netns/NAME).")
    pids: list[int] = Field(default_factory=list, description="Processes of the experiment outside them.")


class Results(_Model):
    local_dir: str
    s3: S3Target | None = None


RALLY_POLL_ACTIONS = ("boot", "delete", "start", "stop", "reboot", "rebuild", "rescue", "unrescue", "suspend",
                      "resume", "pause", "unpause", "shelve", "unshelve", "resize", "resize_confirm", "resize_revert",
                      "migrate", "live_migrate", "image_create", "image_delete")
"""The server actions rally-openstack 4.1 polls for (``nova_server_<action>_poll_interval`` and ``_prepoll_delay``)."""
RALLY_POLL_OPTIONS = tuple(f"nova_server_{a}_{k}" for a in RALLY_POLL_ACTIONS for k in ("prepoll_delay", "poll_interval"))
"""rally.conf [openstack] names of those: each action's first wait and its interval between polls."""
RALLY_POLL_MAX_S = 10.0


CATALOG_TYPES = {"placement": "placement", "glance": "image", "nova": "compute", "neutron": "network"}
"""The Keystone catalog's service type of each control-plane service."""


class CatalogCopy(_Model):
    """The control plane's catalog entries (``types``) registered under ``source``, its region, which the runner's
    region must have too (pipeline/runner/catalog.py)."""

    source: str = Field(min_length=1, max_length=63)
    types: list[Literal["placement", "image", "compute", "network"]] = Field(min_length=1, max_length=4)


class RunnerConfig(_Model):
    benchmark: str = Field(min_length=1)
    namespace: str = "lab"
    trial: Trial
    region: str
    role: Literal["load"] = "load"
    attempt: int = Field(default=1, ge=1)
    keystone: KeystoneSettings
    task: dict[str, Any]
    start_at: str | None = None
    max_start_skew_s: float = Field(default=30.0, ge=0)
    release: Release | None = None
    # Rally task run before the measured one when this run's deployment is new: not measured,
    # its report kept as logs/warmup.json
    warmup_task: dict[str, Any] | None = None
    # Rally's [openstack] options (rally_openstack's nova_server_*_poll_interval / *_prepoll_delay), from
    # spec.workload.pollInterval: names from RALLY_POLL_ACTIONS only, seconds within its bounds
    rally_openstack: dict[str, float] = Field(default_factory=dict)
    # public images the runner makes (the admin, the region's Glance) before the tasks and deletes after: the tiny
    # image a region's boot scenarios share across their tenants (pipeline/runner/images.py)
    images: list[str] = Field(default_factory=list, max_length=4)
    # the serving control plane's entries copied under this region's name where missing (a stretched plane)
    catalog: CatalogCopy | None = None
    contention: Contention = Field(default_factory=Contention)
    gauges: Gauges = Field(default_factory=Gauges)
    network_requested: list[LinkRequested] = Field(default_factory=list)
    # the network check before the load, in brief (core/lifecycle/network.py summary), where the provider has it
    network_check: dict[str, Any] = Field(default_factory=dict)
    faults: list[FaultSpan] = Field(default_factory=list)
    slo: list[SloSpec] = Field(default_factory=list)  # per scenario of the task (docs/results.md, "SLOs")
    results: Results
    versions: dict[str, str] = Field(default_factory=dict)
    # How the trial's services were deployed (the lab: shared deployment id and
    # this trial's place on it); empty when deployed for this trial alone.
    deployment: dict[str, Any] = Field(default_factory=dict)

    @field_validator("start_at")
    @classmethod
    def _check_start_at(cls, v: str | None) -> str | None:
        if v is not None:
            parse_time(v)
        return v

    @field_validator("rally_openstack")
    @classmethod
    def _check_rally_openstack(cls, v: dict[str, float]) -> dict[str, float]:
        for name, seconds in v.items():
            if name not in RALLY_POLL_OPTIONS:
                raise ValueError(f"rally_openstack: {name!r} is not one of Rally's server poll options")
            if not 0 < seconds <= RALLY_POLL_MAX_S:
                raise ValueError(f"rally_openstack.{name}: {seconds} s, not within (0, {RALLY_POLL_MAX_S}]")
        return v

    @field_validator("images")
    @classmethod
    def _check_images(cls, v: list[str]) -> list[str]:
        for name in v:
            if not SHARED_IMAGE_NAME.fullmatch(name):
                raise ValueError(f"images: {name!r} is not wanwide-tiny-<region>")
        return v

    @field_validator("task", "warmup_task")
    @classmethod
    def _check_task(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        if v.get("version") != 2:
            raise ValueError("task must be a Rally task in format v2 ({version: 2, subtasks: [...]})")
        if not isinstance(v.get("subtasks"), list) or not v["subtasks"]:
            raise ValueError("task.subtasks must be a non-empty list")
        return v

    def start_time(self) -> datetime | None:
        return parse_time(self.start_at) if self.start_at else None

    def scenarios(self) -> list[str]:
        names: list[str] = []
        for st in self.task.get("subtasks", []):
            for wl in st.get("workloads", [st]):
                sc = wl.get("scenario") or {}
                if isinstance(sc, dict):
                    names.extend(sc.keys())
        return names


class ProbeTarget(_Model):
    region: str
    host: str
    port: int = Field(ge=1, le=65535)
    requested_rtt_ms: float = Field(ge=0, description="What the plan asks of this pair (for the log).")


class ProbeConfig(_Model):
    """``wanwide runner probe``: the network check's measurement from one region (the Kubernetes provider's
    probe Job); its result is a JSON document at :attr:`key` in the results store."""

    benchmark: str
    trial: str
    region: str
    check: int = Field(ge=1, description="Which measurement of the trial's network (a network off is measured again).")
    targets: list[ProbeTarget]
    samples: int = Field(20, ge=1, le=1000)
    interval_s: float = Field(0.05, ge=0)
    timeout_s: float = Field(1.0, gt=0)
    settle_s: float = Field(0, ge=0, description="Seconds to wait before the first sample: the Kubernetes provider "
                            "shapes a pod that starts after the WAN's Chaos Mesh objects with objects of its own, which "
                            "takes a moment (Chaos Mesh selects an object's pods once, when it is made).")
    results: S3Target

    @property
    def key(self) -> str:
        return probe_key(self.results.prefix, self.benchmark, self.trial, self.check, self.region)


class WatchTarget(_Model):
    """One pair watched from a watch Job's region: ``region`` is the pair's other end, reached at ``host:port``."""

    region: str
    kind: Literal["keystone", "database"]
    host: str
    port: int
    requested_rtt_ms: float = Field(0.0, ge=0)
    requested_loss_pct: float = Field(0.0, ge=0, le=100)


class WatchConfig(_Model):
    """``wanwide runner watch``: the pairs of regions from one region probed through the load (the Kubernetes
    provider's watch Job, where the load's runner cannot enter the other regions' network namespaces): every
    ``period_s`` from ``start_at``, its document stored at :attr:`key` every ``flush_s`` and once more, final,
    when the load's runner marks the load done (:attr:`done_key`), at ``max_s`` after the start, or on SIGTERM."""

    benchmark: str
    trial: str
    region: str
    attempt: int = Field(1, ge=1)
    start_at: str
    targets: list[WatchTarget] = Field(min_length=1, max_length=128)
    period_s: float = Field(gt=0, le=600)
    timeout_s: float = Field(1.0, gt=0, le=30)
    offset_s: float = Field(0.0, ge=0, le=600, description="The first probes this late (watches do not probe at "
                                                           "one instant).")
    flush_s: float = Field(30.0, gt=0, le=3600)
    max_s: float = Field(gt=0, le=7 * 24 * 3600, description="Stop this long after the start whatever happens.")
    coverage: dict[str, Any] | None = None
    results: S3Target

    @field_validator("start_at")
    @classmethod
    def _check_start_at(cls, v: str) -> str:
        parse_time(v)
        return v

    @property
    def key(self) -> str:
        return watch_key(self.results.prefix, self.benchmark, self.trial, self.attempt, self.region)

    @property
    def done_key(self) -> str:
        return watch_key(self.results.prefix, self.benchmark, self.trial, self.attempt, None)


def watch_key(prefix: str, benchmark: str, trial: str, attempt: int, region: str | None) -> str:
    """Where a watch Job stores the pairs it probed through attempt ``attempt``'s load (``region``), or where the
    load's runner marks that load done (None): beside the network check's documents."""
    leaf = f"{region}.json" if region else "done"
    return "/".join(p.strip("/") for p in (prefix, benchmark, trial, "_network", f"during-{attempt}", leaf)
                    if p and p.strip("/"))


def probe_key(prefix: str, benchmark: str, trial: str, check: int, region: str) -> str:
    """Where a probe's result lives: beside the trial's bundles (``_network`` is no region's name)."""
    return "/".join(p.strip("/") for p in (prefix, benchmark, trial, "_network", f"check-{check}", f"{region}.json")
                    if p and p.strip("/"))


def parse_time(value: str) -> datetime:
    """ISO 8601 to an aware UTC datetime; a naive time is taken as UTC."""
    return parse(value)


def load_config(path: str | Path) -> RunnerConfig:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise ValueError(f"runner config {p}: no such file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"runner config {p}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    try:
        return RunnerConfig.model_validate(data)
    except Exception as e:  # pydantic.ValidationError: keep its field paths
        raise ValueError(f"runner config {p}: {e}") from None


# ---- where results go --------------------------------------------------------------------------------

def s3_target(s3: Any, *, keys_from_secret_names: bool = False) -> S3Target | None:
    """``spec.results.s3`` as an upload target. The keys are read from environment variables: named
    ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (a pod's env, filled from the Secret), or, with
    ``keys_from_secret_names``, named like the Secret's keys (the lab: there is no Secret, the user exports
    them); without a ``secretRef``, none: the AWS SDK's default chain (``ambient``)."""
    if s3 is None:
        return None
    if s3.secret_ref is None:
        keys: dict[str, Any] = {"ambient": True}
    else:
        keys = ({"access_key_env": s3.secret_ref.access_key_key, "secret_key_env": s3.secret_ref.secret_key_key}
                if keys_from_secret_names else {})
    return S3Target(endpoint=s3.endpoint, bucket=s3.bucket, prefix=s3.prefix, region=s3.region, **keys)


def object_bucket(data: dict[str, str]) -> tuple[str, str, str] | None:
    """(endpoint, bucket, region) from an ObjectBucketClaim's ConfigMap data; None until it is filled."""
    if "BUCKET_HOST" not in data or "BUCKET_NAME" not in data:
        return None
    port = data.get("BUCKET_PORT", "80")
    scheme = "https" if port == "443" else "http"
    return f"{scheme}://{data['BUCKET_HOST']}:{port}", data["BUCKET_NAME"], data.get("BUCKET_REGION", "us-east-1")


# ---- the lifecycle's event log -----------------------------------------------------------------------

def event_entry(trial: str, attempt: int, phase: str | None, reason: str, message: str, type_: str,
                at: datetime, load_start: datetime | None = None) -> dict[str, Any]:
    """One entry of a trial's lifecycle event log: a phase change (``reason`` the new phase, ``message``
    "Old → New: why") or an event the lifecycle emitted, with the attempt and, once the load started,
    the seconds since its start. The lab writes one JSON object a line (``events/<benchmark>/<trial>.jsonl``);
    the Kubernetes provider posts each as an event of its Trial."""
    from .timestamps import iso

    entry = {"at": iso(at, precise=True), "trial": trial, "attempt": attempt, "phase": phase, "reason": reason,
             "message": message, "type": type_}
    if load_start is not None:
        entry["since_load_start_s"] = round((at - load_start).total_seconds(), 3)
    return entry
