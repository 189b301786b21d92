"""``Trial``: one point of a Benchmark's matrix × one repetition (a child of the Benchmark)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from wanwide.core.api.base import Model, ObjectMeta, Observed
from wanwide.core.api.topology import Condition, conditions_field

PHASES = (
    "Pending",
    "Provisioning",
    "Injecting",
    "VerifyingNetwork",
    "Loading",
    "Collecting",
    "CleaningUp",
    "Succeeded",
    "Failed",
)
TERMINAL = ("Succeeded", "Failed")


class TrialSpec(Model):
    benchmark: str = Field(description="Name of the owning Benchmark.")
    index: int = Field(ge=0, description="Position in the Benchmark's matrix expansion.")
    repetition: int = Field(0, ge=0)
    position: int | None = Field(None, ge=0, description="Place in the Benchmark's run order (spec.matrix.order): "
                                 "pending trials start lowest position first.")
    parameters: dict[str, str] = Field(default_factory=dict, description="Matrix point of this trial.")
    plan_generation: int = Field(0, ge=0, description="Benchmark generation this trial was planned from.")


class Objectives(Model):
    """The trial's service level objectives (spec.workload.slo) as its bundles recorded them."""

    met: int = Field(0, ge=0)
    missed: int = Field(0, ge=0, description="Objectives missed: the trial still Succeeds, its data kept "
                        "(an ObjectivesMissed warning).")
    unmeasured: int = Field(0, ge=0, description="Objectives with nothing to measure (no successful iteration).")
    summary: str = Field("", max_length=200, description="met/total, as kubectl get trials -o wide shows it.")
    misses: list[str] = Field(default_factory=list, max_length=5, description="The first misses: region, "
                              "scenario, what was measured against the bound (every one is in the bundles).")


class TrialStatus(Observed):
    phase: Literal[PHASES] | None = None  # type: ignore[valid-type]
    phase_start_time: str | None = None
    attempt: int = 0
    done: list[str] = Field(default_factory=list, description="Steps already carried out: the deployment's stages done "
                            "(namespaces, database, keystone-schema, keystone), and the current phase's steps.")
    deploy_tries: dict[str, int] = Field(default_factory=dict, description="Each deployment stage's failures so far (a "
                                         "chart that failed to render, a hook Job that failed): tried again up to 3 "
                                         "failures in all.")
    applied: list[str] = Field(default_factory=list, description="Deployment stages whose objects the operator applied "
                               "at once (the trial's namespaces and what lives in them).")
    ahead: dict[str, int] = Field(default_factory=dict, description="Per deployment stage, its releases (region order) "
                                  "whose objects before their first hooks were applied while the stages before ran.")
    outcome: Literal["Succeeded", "Failed"] | None = Field(None, description="Result decided before clean-up.")
    outcome_message: str | None = Field(None, description="Why the trial failed (kept through clean-up).")
    reason: str | None = None
    message: str | None = None
    network_check: int = Field(0, ge=0, description="Which measurement of the network VerifyingNetwork is on "
                               "(a network found off is measured once more).")
    load_start_at: str | None = None
    load_start_delay: str | None = Field(None, description="The current attempt's start delay when it is not "
                                         "spec.workload.startDelay: a retry after runners were ready too late "
                                         "(StartTooLate) starts later by what they needed, at most 1h.")
    faults_in_force: list[str] = Field(default_factory=list, description="Fault windows in force now (loss0, "
                                       "partition1, dropout0-3: the fourth cut of the first dropout).")
    faults_injected: dict[str, float] = Field(default_factory=dict, description="Seconds from each fault window "
                                              "occurrence's start until it was in force (Chaos Mesh: AllInjected).")
    faults_late: list[str] = Field(default_factory=list, description="Fault window occurrences not in force "
                                   "10 s after they began (a FaultLate warning each).")
    results_uri: str | None = Field(None, alias="resultsURI")
    objectives: Objectives | None = Field(None, description="The service level objectives the bundles recorded "
                                          "(Collecting; none when the workload sets none).")
    start_time: str | None = None
    completion_time: str | None = None
    observed_generation: int | None = None
    conditions: list[Condition] = conditions_field()


class Trial(Observed):
    api_version: Literal["wanwide.io/v1alpha1"] = "wanwide.io/v1alpha1"
    kind: Literal["Trial"] = "Trial"
    metadata: ObjectMeta
    spec: TrialSpec
