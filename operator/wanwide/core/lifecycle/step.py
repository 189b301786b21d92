"""The words between the lifecycle and a provider: what a provider saw, what the lifecycle asks, the step it decides.

A provider observes what the current phase needs and says it in these words (:class:`Seen`); the
lifecycle's ``decide`` answers with a :class:`Step`: the next phase, reason and message, the fields to
record, the abstract actions and when to look again. The provider carries the actions out its own way
and records the step with the one reducer (``state.apply``). Nothing here names how a provider works.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wanwide.core.lifecycle.deploy import Stage
from wanwide.core.plan.links import Pair

Status = dict[str, Any]


@dataclass(frozen=True)
class Progress:
    """How far a provider got with what the lifecycle asked of it."""

    done: bool = False
    waiting: str = ""  # what it waits for
    failed: str | None = None  # why it failed: tried again as far as the lifecycle allows, then the trial fails
    refused: tuple[str, str] | None = None  # (reason, why): never tried again (``deploy.REFUSALS``)
    wake_s: float | None = None  # look again after this long at the latest


@dataclass(frozen=True)
class Unplaced:
    """A part of the trial that nothing will run (the one waiting longest), in the provider's words."""

    what: str  # which part
    waited_s: float
    message: str  # why nothing runs it and how to fix that


@dataclass(frozen=True)
class Seen:
    """What a provider observed, in the lifecycle's words, in parts: each phase reads its own (``machine.parts``)."""

    # start (Pending): the trial is to start now (its Benchmark's turn, its parallelism)
    start: bool = False
    # any time: the trial must not run at all (``INVALID_PLAN`` | ``NOT_OWNED``, why); the provider's step raised
    refused: tuple[str, str] | None = None
    crashed: BaseException | None = None
    # deployment (Provisioning): each deployment stage
    stages: Mapping[str, Progress] = field(default_factory=dict)
    # wan (Injecting): the plan's WAN in force (failed: it could not be); the provider cannot shape at all (why)
    wan: Progress = Progress()
    cannot_shape: str | None = None
    # network (VerifyingNetwork): the current measurement, once complete (per measured pair its probes' RTTs in ms,
    # None for a probe lost); what it waits for; a probe that failed; why this provider cannot measure here
    network: dict[Pair, list[float | None]] | None = None
    network_waiting: str = ""
    network_failed: str | None = None
    network_unmeasurable: str | None = None
    # load (Loading): region → missing|running|complete|failed|stopped; each fault occurrence in force that the
    # provider saw in force → seconds after the load start when it first was (None: nothing observed); the
    # provider's word on a fault it could not put in force and what to check; why the results store does not
    # answer (network and bundles too); cannot_shape too
    runners: dict[str, str] = field(default_factory=dict)
    # a failed runner's own word (its bundle's status: "<reason>: <message>"), where the provider could read it
    runner_said: dict[str, str] = field(default_factory=dict)
    # a runner that refused to start late (StartTooLate): how far past the common start it was, in seconds
    runner_late: dict[str, float] = field(default_factory=dict)
    faults_injected: dict[str, float] | None = None
    fault_why: str | None = None
    store_error: str | None = None
    # bundles (Collecting): (found, missing, URI); load region → the objectives its bundle recorded (once all
    # are found; None: not read)
    bundles: tuple[list[str], list[str], str] | None = None
    objectives: Mapping[str, list[dict[str, Any]] | None] | None = None
    # cleanup (CleaningUp): the shaping and, as spec.cleanup says, the deployment gone; what of the shaping is left
    cleaned: Progress = Progress()
    shaping_left: str | None = None
    # placement (every phase before CleaningUp): a part of the trial nothing runs
    unplaced: Unplaced | None = None


@dataclass(frozen=True)
class Deploy:
    """Deploy ``stage`` (or go on with it); ``retry``: it failed, bring it up again; ``ahead``: the stages before
    it are not done, apply only what of it waits on nothing (a provider may do nothing)."""

    stage: Stage
    retry: bool = False
    ahead: bool = False


@dataclass(frozen=True)
class ShapeWan:
    """Make the WAN what the fault schedule puts in force ``elapsed_s`` after the load start (None: the plan's)."""

    elapsed_s: float | None = None


@dataclass(frozen=True)
class Measure:
    """Measure the probe pairs' RTT (measurement ``check``)."""

    check: int


@dataclass(frozen=True)
class StartRunners:
    """Start the runners of attempt ``attempt`` in every load region; the provider records the load start
    (``loadStartAt``): ``start_delay_s`` after it starts them where the runners wait for a start instant (a
    provider whose coordinator releases them once ready has no use for it)."""

    attempt: int
    start_delay_s: float = 0.0


@dataclass(frozen=True)
class StopRunners:
    """Remove attempt ``attempt``'s runners (a retry starts new ones)."""

    attempt: int


@dataclass(frozen=True)
class CleanUp:
    """Remove the trial's shaping first, then what spec.cleanup says."""


@dataclass(frozen=True)
class Event:
    """An entry of the lifecycle's event log (each provider posts it its own way)."""

    reason: str
    message: str
    type: str = "Normal"


LifecycleAction = Deploy | ShapeWan | Measure | StartRunners | StopRunners | CleanUp | Event


@dataclass
class Step:
    """The lifecycle's decision: where the trial goes, what to do, what to record, when to look again."""

    phase: str | None = None  # the next phase (None: stay)
    reason: str = ""
    message: str = ""
    status: Status = field(default_factory=dict)  # fields to record
    actions: list[LifecycleAction] = field(default_factory=list)
    wake_s: float | None = None


def fail(reason: str, message: str, status: Status | None = None, actions: list[LifecycleAction] | None = None) -> Step:
    """Clean up (the shaping first), then end Failed with this reason and message."""
    return Step("CleaningUp", reason, message, {**(status or {}), "outcome": "Failed"}, list(actions or []))


__all__ = ["CleanUp", "Deploy", "Event", "LifecycleAction", "Measure", "Progress", "Seen", "ShapeWan",
           "StartRunners", "Status", "Step", "StopRunners", "Unplaced", "fail"]
