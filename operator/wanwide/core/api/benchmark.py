"""``Benchmark``: what to deploy, how to load it, which faults, which sweep."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from wanwide.core.api import limits
from wanwide.core.api.base import (
    LABEL_KEY_RE,
    LABEL_VALUE_RE,
    WHOLE_NUMBER,
    Bool,
    FieldProblem,
    Int,
    Model,
    ObjectMeta,
    ObjectName,
    Observed,
    RegionName,
    cel,
    cel_matches,
)
from wanwide.core.api.freeform import FreeForm
from wanwide.core.api.openstack import Keystone, KeystoneImages, OpenStack  # noqa: F401  (Keystone: re-exported)
from wanwide.core.api.refs import (
    GALERA_OPTIONS_MAX,
    GALERA_VALUE_RE,
    ConfigKey,
    Image,
    LocalDir,
    S3Prefix,
    S3Region,
    Tag,
    galera_options_problem,
    url,
)
from wanwide.core.api.scenarios import FULL_NAME_RE, SHORT_NAMES, admission_rules
from wanwide.core.api.topology import Condition, NodeSelector, TopologySpec, conditions_field
from wanwide.core.api.units import (
    TIMEOUT_MAX,
    Percent,
    Rtt,
    Timeout,
    cel_duration_ok,
    duration,
    nanos,
)

Backend = Literal["mariadb", "galera", "cockroachdb"]
ProbeTimeout = duration("1s", "10m")
Load = Literal["light", "high"]
CleanupPolicy = Literal["Always", "OnSuccess", "Never"]

_SCENARIO_RULE = (
    "self in [" + ", ".join(f"'{s}'" for s in SHORT_NAMES) + "] || " + cel_matches(FULL_NAME_RE)
)
_SCENARIO_MSG = (
    "unknown scenario: use a short name (" + ", ".join(SHORT_NAMES) + ") or a full Rally name such as KeystoneBasic.create_and_list_users"
)


ARGS_MAX_BYTES, ARGS_MAX_KEYS = 16 * 1024, 50
AFFINITY_MAX_BYTES = 16 * 1024
ScenarioArgs = FreeForm(ARGS_MAX_BYTES, ARGS_MAX_KEYS)
Affinity = FreeForm(AFFINITY_MAX_BYTES, 3)


class GaleraTuning(Model):
    """Galera settings; timeouts are derived from the largest RTT unless set here."""

    allow_fewer_than_three: Bool = Field(
        False, description="Allow a 2-member cluster (no quorum after one failure); default needs ≥3 regions."
    )
    sst: Literal["rsync", "mariabackup", "mysqldump"] = "mariabackup"
    provider_options: dict[str, Annotated[str, Field(max_length=256, pattern=GALERA_VALUE_RE)]] | None = Field(
        None, description=f"wsrep provider options, verbatim; override derived ones. At most {GALERA_OPTIONS_MAX}: "
        "keys such as evs.suspect_timeout, values of letters, digits and _ . , : + * - (they are written into my.cnf "
        "and wsrep_provider_options: no space, quote, '/', ';', '=' or newline).",
        # the keys are the planner's to check: CEL estimates a map key at the size of the whole request
        json_schema_extra={"maxProperties": GALERA_OPTIONS_MAX})
    cluster_healthy_timeout: Timeout | None = Field(None, description="1s to 24h.")

    @model_validator(mode="after")
    def _options(self) -> GaleraTuning:
        if self.provider_options and len(self.provider_options) > GALERA_OPTIONS_MAX:
            raise FieldProblem("providerOptions", f"{len(self.provider_options)} options, at most {GALERA_OPTIONS_MAX}")
        problem = galera_options_problem(self.provider_options or {})
        if problem is not None:
            raise FieldProblem("providerOptions", problem)
        return self


class CockroachTuning(Model):
    version: Tag = Field("v24.3.5", description="CockroachDB version (image tag).")


class Database(Model):
    """The database all regions' Keystones share."""

    backend: Backend = "mariadb"
    primary_region: RegionName | None = Field(
        None, description="mariadb: region holding the single server (default: the first region)."
    )
    in_memory: Bool = Field(True, description="Ephemeral, memory-backed storage, as the studies (tmpfs).")
    image: Image | None = Field(None, description="Database image override.")
    galera: GaleraTuning = Field(default_factory=GaleraTuning)
    cockroachdb: CockroachTuning = Field(default_factory=CockroachTuning)
    probe_timeout: ProbeTimeout | None = Field(
        None, description="mariadb and galera: how long the database pods' liveness and readiness probes may take "
        "(1s to 10m, whole seconds; mariadb-operator's default 5s). Raise it on slow or emulated nodes, where a "
        "busy server misses 5s and its liveness probe restarts it.")


class UsersContext(Model):
    tenants: Int = Field(1, ge=1, le=1000)
    users_per_tenant: Int = Field(1, ge=1, le=1000)


def _check_scenario(name: str) -> str:
    if name not in SHORT_NAMES and not re.fullmatch(FULL_NAME_RE, name):
        raise ValueError(f"{name!r}: {_SCENARIO_MSG}")
    return name


SloBound = duration("0s", "24h")  # an iteration's time bound: up to a day


class PercentileBound(Model):
    """The ``p``-th percentile of a scenario's iteration times at most ``max``."""

    p: float = Field(ge=1, le=99.9, description="The percentile, e.g. 95 or 99.")
    max: SloBound = Field(description="Its bound, e.g. 1s or 800ms.")


class Slo(Model):
    """Service level objectives of a scenario, as Rally's SLA (recorded per run: the bundle's manifest, the
    report's SLO table; ``wanwide compare --fail-on slo`` fails a CI job on one missed). A run that misses
    one still measured: its reason is SLAFailed, its data are kept."""

    max_duration: SloBound | None = Field(None, description="Every iteration at most this long (Rally's "
                                          "max_seconds_per_iteration).")
    max_mean_duration: SloBound | None = Field(None, description="The mean iteration at most this long (Rally's "
                                               "max_avg_duration).")
    percentile: PercentileBound | None = Field(None, description="A percentile of the iteration times at most "
                                               "this long (evaluated by wanwide from the iterations).")
    max_failure_rate: Percent = Field("0%", description="Failed iterations at most this share (Rally's "
                                      "failure_rate max).")


class Scenario(Model):
    """A Rally scenario: short name of a Keystone scenario or a full Rally name."""

    name: str = Field(
        max_length=120,
        json_schema_extra={"x-kubernetes-validations": [{"rule": _SCENARIO_RULE, "message": _SCENARIO_MSG}]},
    )
    args: ScenarioArgs | None = Field(
        None, description=f"Arguments of the scenario: at most {ARGS_MAX_KEYS} keys and {ARGS_MAX_BYTES // 1024} KiB "
        "as JSON.")
    times: Annotated[int, Field(ge=1, le=100000), WHOLE_NUMBER] | None = Field(None)
    concurrency: Annotated[int, Field(ge=1, le=1000), WHOLE_NUMBER] | None = Field(None)
    users: UsersContext | None = None
    slo: Slo | None = Field(None, description="This scenario's objectives (default: workload.slo).")

    @model_validator(mode="after")
    def _name(self) -> Scenario:
        _check_scenario(self.name)
        return self


class ConfigMapKeyRef(Model):
    name: ObjectName
    key: ConfigKey = "task.yaml"


class Warmup(Model):
    """Each scenario run a few times on a new deployment before its first measured task, not measured
    (the first requests of a Keystone worker, a database connection pool, a cold buffer pool are slow)."""

    times: Int = Field(4, ge=0, le=10000, description="Iterations of each scenario (0: no warm-up).")


StartDelay = duration("0s", "1h")
StartSkew = duration("1s", "1h")
PollInterval = duration("100ms", "10s")


class Workload(Model):
    """Rally load."""

    scenarios: list[Scenario] | None = Field(None, min_length=1, max_length=50)
    task_config_map: ConfigMapKeyRef | None = Field(None, description="A raw Rally task (v2) instead of scenarios.")
    load: Load = Field("light", description="light: one Rally in one region; high: one Rally in every region at once.")
    load_region: RegionName | None = Field(None, description="light: the loaded region (default: the first).")
    times: Annotated[int, Field(ge=1, le=100000), WHOLE_NUMBER] | None = Field(None, description="Default iterations per scenario.")
    concurrency: Annotated[int, Field(ge=1, le=1000), WHOLE_NUMBER] | None = Field(None, description="Default concurrency per scenario.")
    warmup: Warmup = Field(default_factory=Warmup)
    slo: Slo | None = Field(None, description="Objectives of every scenario without its own slo (default: no "
                            "failed iteration, Rally's failure_rate max 0).")
    start_delay: StartDelay = Field(
        "2m", description="Load regions start together this long after the Jobs are created; it must cover the "
        "runner's preparation (Rally's database and environment) and the warm-up. 0s to 1h. A retry after runners were "
        "ready too late starts later by what they needed (status.loadStartDelay).")
    max_start_skew: StartSkew = Field(
        "10s", description="A runner starting later than this fails the trial. 1s to 1h.")
    poll_interval: PollInterval | None = Field(
        None, description="How often Rally asks whether a server reached its state (boot, delete, reboot, …), and "
        "how long it waits before it first asks. Unset: Rally's own (boot: 1s, then every 2s; delete: 2s, then every "
        "2s), which puts Nova's times on a 2s grid. 100ms to 10s; a short one resolves them at the price of one API "
        "call per interval.")

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "has(self.scenarios) != has(self.taskConfigMap)",
                    "set exactly one of workload.scenarios or workload.taskConfigMap",
                ),
                cel(
                    "!has(self.loadRegion) || self.load == 'light'",
                    "workload.loadRegion only applies to load: light; remove it for load: high",
                ),
            ]
        }
    )

    @model_validator(mode="after")
    def _rules(self) -> Workload:
        if (self.scenarios is None) == (self.task_config_map is None):
            raise ValueError("set exactly one of workload.scenarios or workload.taskConfigMap")
        if self.load_region is not None and self.load != "light":
            raise ValueError("workload.loadRegion only applies to load: light; remove it for load: high")
        return self


WINDOW_MAX = TIMEOUT_MAX
WindowStart = duration(hi=WINDOW_MAX)
WindowLength = duration("1s", WINDOW_MAX)


class Window(Model):
    start: WindowStart = Field(
        "0s", description="Offset from the start of the load: before spec.timeouts.loading, which ends it.")
    duration: WindowLength = Field(description="1s to 24h.")


class Partition(Window):
    """Cut a set of regions off from all others for a window."""

    regions: list[RegionName] = Field(min_length=1, max_length=1000)


_DROPOUT_MSG = "a dropout must be shorter than its period: lower 'for' or raise 'every'"
# CEL's duration() reads Go durations, a superset of DURATION_RE; the guards leave malformed values to the
# format rule. ``for`` is a CEL keyword: the API server names the field ``__for__``.
_DROPOUT_RULE = (f"!{cel_duration_ok('self.every')} || !{cel_duration_ok('self.__for__')} || "
                 "duration(self.__for__) < duration(self.every)")
DROPOUT_EVERY_MIN = "10s"
DropoutPeriod = duration(DROPOUT_EVERY_MIN, WINDOW_MAX)


class Dropout(Model):
    """Periodic cut of regions from the rest: every X for Y."""

    every: DropoutPeriod = Field(
        description="The period: the first cut begins this long after the load start. 10s to 24h, before "
        "spec.timeouts.loading; all dropouts cut at most 2000 times within timeouts.loading.")
    for_: WindowLength = Field(alias="for", description="How long each cut lasts: 1s or more, shorter than every.")
    regions: list[RegionName] | None = Field(
        None, max_length=1000, description="Regions cut off together (default: every region but the database's primary)."
    )

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [cel(_DROPOUT_RULE, _DROPOUT_MSG, ".for")]})

    @field_validator("for_")
    @classmethod
    def _shorter(cls, value: str, info: ValidationInfo) -> str:
        every = info.data.get("every")
        if every is not None and nanos(value) >= nanos(every):
            raise ValueError(_DROPOUT_MSG)
        return value


class LossWindow(Window):
    """Extra loss on all links of some regions for a window."""

    regions: list[RegionName] = Field(min_length=1, max_length=1000)
    loss: Percent


class Faults(Model):
    """Fault windows, timed from the load start (a retried load replays them all from its new start). Windows may overlap and do not add up: on each link the lossiest loss window in force applies (the link's own shaping plus that window's extra loss), and a cut (a partition or a dropout) beats any loss. Every window starts before spec.timeouts.loading; each window counts once more in the Benchmark's shaped links (spec.matrix)."""  # noqa: E501

    partitions: list[Partition] = Field(default_factory=list, max_length=50)
    dropouts: list[Dropout] = Field(default_factory=list, max_length=10)
    loss_windows: list[LossWindow] = Field(default_factory=list, max_length=50)


class Matrix(Model):
    """Parameter sweep: the trials are the product of every axis given, at most 1000 per Benchmark; their regions
    summed at most 1500, their directed links (regions × (regions − 1) per trial, once for its WAN and once per
    fault window) summed at most 1,000,000."""

    backend: list[Backend] | None = Field(None, min_length=1, max_length=3)
    regions: list[Annotated[int, Field(ge=1, le=1000), WHOLE_NUMBER]] | None = Field(
        None, min_length=1, max_length=20, description="Number of regions (1–1000).")
    rtt: list[Rtt] | None = Field(None, min_length=1, max_length=20, description="Default link RTT (each at most 10s).")
    intra_group_rtt: list[Rtt] | None = Field(None, min_length=1, max_length=20)
    inter_group_rtt: list[Rtt] | None = Field(None, min_length=1, max_length=20)
    loss: list[Percent] | None = Field(None, min_length=1, max_length=20, description="Default link loss.")
    load: list[Load] | None = Field(None, min_length=1, max_length=2)
    load_region: list[RegionName] | None = Field(
        None, min_length=1, max_length=20,
        description="Where light load runs (workload.loadRegion), swept: e.g. the database's region and a far one.")
    scenario: list[str] | None = Field(
        None,
        min_length=1,
        max_length=50,
        json_schema_extra={"items": {"type": "string", "maxLength": 120,
                                     "x-kubernetes-validations": [{"rule": _SCENARIO_RULE, "message": _SCENARIO_MSG}]}},
    )
    repetitions: Int = Field(1, ge=1, le=100, description="Trials per parameter point.")
    first_repetition: Int = Field(
        0, ge=0, le=99,
        description="Rounds a campaign already has: this Benchmark runs repetitions firstRepetition … "
        "firstRepetition + repetitions − 1, its trials numbered after theirs and its Interleaved order continuing "
        "the seed's, so rounds added later to a finished campaign (the same Benchmark with firstRepetition = "
        "its old repetitions) merge with it as one campaign. firstRepetition + repetitions is at most 100.")
    order: Literal["Interleaved", "Sequential"] = Field(
        "Interleaved",
        description="Run order. Interleaved: in rounds (round r runs repetition r of every point), each round "
        "in a random order drawn from `seed`, so no parameter value always runs first on a fresh deployment "
        "and slow drifts of the machine spread over every point. Sequential: by trial index.")
    seed: Annotated[int, Field(ge=0, le=2147483647), WHOLE_NUMBER] | None = Field(
        None, description="Seed of the Interleaved order (default: derived from the Benchmark's name). "
        "Recorded in each Trial and result bundle.")
    parallelism: Int = Field(1, ge=1, le=50, description="Trials running at once.")

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        cel(limits.TRIALS_RULE, limits.TRIALS_MSG), cel(limits.ROUNDS_RULE, limits.ROUNDS_MSG)]})

    @model_validator(mode="after")
    def _scenarios(self) -> Matrix:
        for name in self.scenario or []:
            _check_scenario(name)
        if (n := limits.trials(self)) > limits.MAX_TRIALS:
            raise ValueError(limits.budget_problems(limits.Budget(n, None, None))[0][1])
        if self.first_repetition + self.repetitions > limits.MAX_ROUNDS:
            raise ValueError(limits.ROUNDS_MSG)
        return self


class SecretRef(Model):
    name: ObjectName
    access_key_key: ConfigKey = "AWS_ACCESS_KEY_ID"
    secret_key_key: ConfigKey = "AWS_SECRET_ACCESS_KEY"


S3Endpoint = url("http", "https")


class S3(Model):
    endpoint: S3Endpoint = Field(
        description="S3-compatible endpoint URL (path-style): http:// or https://, a host and port, no user name or "
        "password (the keys come from secretRef or the pods' own credentials), no link-local or metadata host.")
    bucket: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    prefix: S3Prefix = Field("wanwide", description="Key prefix: components of letters, digits, '.', '_' and '-' "
                             "separated by '/', none starting with '.'.")
    region: S3Region = "us-east-1"
    secret_ref: SecretRef | None = Field(
        None, description="Secret in the Benchmark's namespace holding the access keys. Absent: the pods' own "
        "credentials (IRSA, workload identity, an instance profile): the runners, the probes and the operator use "
        "the AWS SDK's default credential chain.")


class Results(Model):
    s3: S3 | None = None
    object_bucket_claim: ObjectName | None = Field(
        None, description="ObjectBucketClaim whose ConfigMap and Secret give endpoint and keys."
    )
    local_dir: LocalDir | None = Field(None, description="Lab only: directory for bundles (default: the -o directory).")

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "(has(self.s3) ? 1 : 0) + (has(self.objectBucketClaim) ? 1 : 0) <= 1",
                    "set at most one of results.s3 or results.objectBucketClaim",
                ),
            ]
        }
    )

    @model_validator(mode="after")
    def _one(self) -> Results:
        if self.s3 is not None and self.object_bucket_claim is not None:
            raise ValueError("set at most one of results.s3 or results.objectBucketClaim")
        return self


class Timeouts(Model):
    """Per-phase timeouts of a trial, and of the Benchmark's preflight: each 1s to 24h."""

    preflight: Timeout = Field("10m", description="How long failing preflight checks (spec.preflight, mode Enforce) "
                               "hold the Benchmark before it fails (reason PreflightFailed); no trial has started.")
    provisioning: Timeout = "30m"
    verifying_network: Timeout = "5m"
    injecting: Timeout = "5m"
    loading: Timeout = Field(limits.DEFAULT_LOADING, description="The load's longest run; every fault window "
                             "starts before it.")
    collecting: Timeout = "10m"
    cleaning_up: Timeout = "15m"


# Kubernetes' quantity: 500m, 2Gi, 1.5, 1e3 (k8s.io/apimachinery resource.Quantity).
QUANTITY_RE = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
Quantity = Annotated[str, Field(pattern=QUANTITY_RE, max_length=64,
                                 description="A Kubernetes quantity: 500m, 512Mi, 2Gi, 1.")]
RESOURCE_NAME_RE = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$")
RESOURCES_MAX = 10


_TOL_EXISTS_RULE = "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''"
_TOL_EXISTS_MSG = "a toleration with operator Exists takes no value: remove value, or use operator Equal"
_TOL_KEY_RULE = "(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')"
_TOL_KEY_MSG = "a toleration without a key must have operator Exists (it then tolerates every taint): add a key"


TOLERATION_KEY_RE = "^$|" + LABEL_KEY_RE


class Toleration(Model):
    """A pod toleration, field for field as Kubernetes writes it."""

    key: str | None = Field(None, max_length=316, pattern=TOLERATION_KEY_RE)
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = Field(None, max_length=63, pattern=LABEL_VALUE_RE)
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: Annotated[int, Field(ge=0, le=2147483647), WHOLE_NUMBER] | None = None

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        cel(_TOL_EXISTS_RULE, _TOL_EXISTS_MSG), cel(_TOL_KEY_RULE, _TOL_KEY_MSG)]})

    @model_validator(mode="after")
    def _rules(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError(_TOL_EXISTS_MSG)
        if not self.key and self.operator != "Exists":
            raise ValueError(_TOL_KEY_MSG)
        return self


class Resources(Model):
    """The runner container's resources, as Kubernetes writes them."""

    requests: dict[str, Quantity] | None = Field(None, json_schema_extra={"maxProperties": RESOURCES_MAX},
                                                 description=f"At most {RESOURCES_MAX}, by resource name.")
    limits: dict[str, Quantity] | None = Field(None, json_schema_extra={"maxProperties": RESOURCES_MAX},
                                               description=f"At most {RESOURCES_MAX}, by resource name.")

    @model_validator(mode="after")
    def _names(self) -> Resources:
        for field, value in (("requests", self.requests), ("limits", self.limits)):
            if value and len(value) > RESOURCES_MAX:
                raise FieldProblem(field, f"{len(value)} resources, at most {RESOURCES_MAX}")
            for k in value or {}:
                if len(k) > 316 or not re.fullmatch(RESOURCE_NAME_RE, k):
                    raise FieldProblem(field, f"{k!r} is not a resource name such as cpu, memory or example.com/gpu")
        return self


class RunnerPod(Model):
    """Where and as whom the pods of the Rally and probe Jobs run on a real cluster. Unset fields take the
    operator's defaults (the chart's ``runner.pod`` values); the region's placement always applies too."""

    service_account_name: ObjectName | None = Field(None, description="ServiceAccount of the pods (e.g. one "
                                                    "annotated for IRSA or workload identity, with results.s3 "
                                                    "left without a secretRef).")
    image_pull_secrets: list[ObjectName] | None = Field(None, max_length=10, description="Secrets to pull the "
                                                        "runner image with.")
    node_selector: NodeSelector | None = Field(
        None, description="Added to the region's placement. At most 20 labels.")
    tolerations: list[Toleration] | None = Field(None, max_length=20)
    affinity: Affinity | None = Field(
        None, description="Pod affinity, as Kubernetes writes it (the API server checks it when the Jobs are "
        "created: a refused one fails the trial with reason ObjectRefused). At most "
        f"{AFFINITY_MAX_BYTES // 1024} KiB as JSON.")
    resources: Resources | None = Field(None, description="The runner container's resources (default: requests "
                                        "cpu 500m, memory 512Mi; limit memory 2Gi). The probes keep their own.")


class Runner(Model):
    pod: RunnerPod = Field(default_factory=RunnerPod)
    image: Image | None = Field(
        None, description="Image of the Rally runner. Default: the image the operator runs (the chart's `image` "
        "value, passed as --runner-image), so one value sets both.")
    max_attempts: Int = Field(2, ge=1, le=10, description="Attempts of a trial before it is marked Failed.")
    rally_users: Literal["Prepared", "PerSubtask"] = Field(
        "Prepared",
        description="Users of Rally's default users context. Prepared: the runner makes one project and user "
        "per load region before the task (fast over a WAN). PerSubtask: Rally creates and deletes its own for "
        "the validation and every subtask, as the studies' runs did (seconds per RTT-bound call). Outside the "
        "measured iterations either way; it changes the trial's length and the database counters.",
    )


_OWN_LABELS = "wanwide.io/"
_OWN_LABELS_MSG = "monitoring.labels: keys under wanwide.io/ are wanwide's own; use another prefix"


class Monitoring(Model):
    """Metrics through prometheus-operator (Kubernetes only: the lab runs no exporters and no monitors)."""

    enabled: Bool = Field(
        True,
        description="Exporters (mariadb-operator's mysqld exporter, a memcached exporter beside each memcached) and "
        "the PodMonitors/ServiceMonitors that scrape them. Skipped, with a MonitorsSkipped event on the Trial, "
        "when the monitoring.coreos.com CRDs are not installed. Off: neither is deployed, e.g. where the "
        "exporter images cannot be pulled.",
    )
    labels: dict[str, Annotated[str, Field(max_length=63, pattern=LABEL_VALUE_RE)]] = Field(
        default_factory=dict,
        max_length=20,
        description="Extra labels on every monitor, for the Prometheus monitor selectors (kube-prometheus-stack "
        "selects release: <its Helm release>). mariadb-operator makes the MariaDB/Galera ServiceMonitor "
        "itself: it gets only the release label.",
        json_schema_extra={"x-kubernetes-validations": [
            cel(f"self.all(k, !k.startsWith('{_OWN_LABELS}'))", _OWN_LABELS_MSG)]},
    )

    @model_validator(mode="after")
    def _labels(self) -> Monitoring:
        for k in self.labels:
            if k.startswith(_OWN_LABELS):
                raise ValueError(_OWN_LABELS_MSG)
            if not re.fullmatch(LABEL_KEY_RE, k) or len(k.rpartition("/")[0]) > 253:
                raise ValueError(f"monitoring.labels: {k!r} is not a valid label key")
        return self


class Preflight(Model):
    """The checks of ``wanwide doctor`` the operator runs before a Benchmark's first trial (Kubernetes only)."""

    mode: Literal["Enforce", "Warn", "Skip"] = Field(
        "Enforce",
        description="Enforce: a failing check holds every trial (condition Preflight False, its message names each "
        "failure and its fix); checked again every minute, the trials start once all pass. Warn: failures are "
        "reported (condition, event) and the trials start anyway. Skip: no checks.",
    )
    netem_probe: Bool = Field(
        True,
        description="When the plan shapes links: a short pod on every node that will host a region adds a netem "
        "qdisc in its own network namespace (NET_ADMIN, in a namespace of the Benchmark's labelled for the "
        "privileged Pod Security level), so a kernel without sch_netem is found before the trials start.",
    )


class BenchmarkSpec(Model):
    topology_ref: ObjectName | None = Field(None, description="Topology in the same namespace.")
    topology: TopologySpec | None = Field(None, description="Inline topology instead of topologyRef.")
    openstack: OpenStack = Field(default_factory=OpenStack)
    database: Database = Field(default_factory=Database)
    workload: Workload
    faults: Faults = Field(default_factory=Faults)
    matrix: Matrix = Field(default_factory=Matrix)
    results: Results = Field(default_factory=Results)
    cleanup: CleanupPolicy = Field("Always", description="Delete a trial's namespaces when it ends: Always, OnSuccess, Never.")
    timeouts: Timeouts = Field(default_factory=Timeouts)
    runner: Runner = Field(default_factory=Runner)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    preflight: Preflight = Field(default_factory=Preflight)

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "has(self.topologyRef) != has(self.topology)",
                    "set exactly one of spec.topologyRef (name of a Topology) or spec.topology (inline)",
                ),
                cel(limits.REGION_TRIALS_RULE, limits.REGION_TRIALS_MSG, ".matrix"),
                cel(limits.LINK_WINDOWS_RULE, limits.LINK_WINDOWS_MSG, ".matrix"),
                cel(limits.PARTITION_START_RULE, limits.START_MSG, ".faults.partitions"),
                cel(limits.LOSS_START_RULE, limits.START_MSG, ".faults.lossWindows"),
                cel(limits.EVERY_RULE, limits.EVERY_MSG, ".faults.dropouts"),
                cel(limits.CUTS_RULE, limits.CUTS_MSG, ".faults.dropouts"),
                *(cel(rule, msg) for rule, msg in admission_rules()),
            ]
        }
    )

    @model_validator(mode="after")
    def _topology(self) -> BenchmarkSpec:
        if (self.topology_ref is None) == (self.topology is None):
            raise ValueError("set exactly one of spec.topologyRef (name of a Topology) or spec.topology (inline)")
        return self


class TrialCounts(Observed):
    total: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PreflightCheck(Observed):
    what: str
    state: str = Field(description="ok, FAIL or warn.")
    detail: str = ""
    fix: str = ""


class PreflightStatus(Observed):
    generation: int | None = Field(None, description="The spec generation checked.")
    since: str | None = Field(None, description="The first check of that generation (timeouts.preflight runs from it).")
    gave_up: bool | None = Field(None, description="Failing past timeouts.preflight: the Benchmark failed.")
    run: str | None = Field(None, description="The netem probe in flight (its Jobs' wanwide.io/doctor label).")
    start_time: str | None = None
    checked_time: str | None = None
    checks: list[PreflightCheck] = Field(default_factory=list, description="The last verdict, one line per check.")


class BenchmarkStatus(Observed):
    phase: str | None = None
    progress: str | None = None
    observed_generation: int | None = None
    plan_generation: int | None = Field(None, description="Generation whose spec the not-yet-started trials follow.")
    conditions: list[Condition] = conditions_field()
    trials: TrialCounts = Field(default_factory=TrialCounts)
    results_uri: str | None = Field(None, alias="resultsURI")
    start_time: str | None = None
    completion_time: str | None = None
    preflight: PreflightStatus | None = None
    backend: str | None = Field(None, description="The database backend(s) the trials run: the swept values "
                                "(mariadb,galera), or matrix (N) when they do not fit a column.")
    load: str | None = Field(None, description="The load(s) the trials run, as backend.")
    sweep: str | None = Field(None, description="Every parameter the trials vary, with its values "
                              "(rtt=0ms,100ms regions=3,9).")
    time_left: str | None = Field(None, description="Until every trial is done (1h12m; unknown before a trial "
                                  "is done): each trial to run takes the mean time of the done trials of its "
                                  "parameter point, else of all done trials, on spec.matrix.parallelism slots.")
    estimated_completion_time: str | None = Field(None, description="Now plus timeLeft, to the minute.")


class Benchmark(Observed):
    api_version: Literal["wanwide.io/v1alpha1"] = "wanwide.io/v1alpha1"
    kind: Literal["Benchmark"] = "Benchmark"
    metadata: ObjectMeta
    spec: BenchmarkSpec
