"""Chaos Mesh objects: the WAN (one netem object per source region × link class × pod-set
kind), partition windows, periodic dropouts and extra-loss windows.

Every selector names the trial's own namespaces (or its own database pods) and
nothing else, so chaos can never reach outside the trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..api.units import fmt_ms, fmt_pct, fmt_rate
from ..plan import names
from ..plan.faults import FaultWindow
from ..plan.latency import LinkClass, classes
from ..plan.links import OneWay
from ..plan.trial import TrialPlan
from .common import meta, obj
from .database import members

CHAOS_API = "chaos-mesh.org/v1alpha1"


def _pod_sets(plan: TrialPlan, regions: list[str] | tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """Selectors covering the regions' pods: ('n', namespaces) and, with members, ('m', pods)."""
    out: list[tuple[str, dict[str, Any]]] = [("n", {"namespaces": [plan.namespace(r) for r in regions]})]
    mem = members(plan)
    if mem:
        pods = [mem[r] for r in regions]
        out.append(("m", {"pods": {plan.db_namespace: pods}}))
    return out


def _tag(plan: TrialPlan) -> str:
    """Chaos Mesh derives ipset names from the object name alone: make names unique per trial."""
    return names.short_hash(f"{plan.bench_namespace}/{plan.name}", 6)


def netem(shaping: OneWay) -> dict[str, Any]:
    """The netem fields of one object: delay, loss and rate together, so none overrides another."""
    body: dict[str, Any] = {}
    if shaping.delay_ms or shaping.jitter_ms:
        body["delay"] = {"latency": fmt_ms(shaping.delay_ms), "jitter": fmt_ms(shaping.jitter_ms), "correlation": "0"}
    loss = shaping.loss_pct
    if loss:
        body["loss"] = {"loss": fmt_pct(loss), "correlation": "0"}
    if shaping.rate_mbit is not None:
        body["rate"] = {"rate": fmt_rate(shaping.rate_mbit)}
    return body


def _class_objects(plan: TrialPlan, c: LinkClass, prefix: str,
                   annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    out = []
    for s_kind, src in _pod_sets(plan, [c.src]):
        for t_kind, dst in _pod_sets(plan, c.dsts):
            name = f"{prefix}-{_tag(plan)}-{c.src}-c{c.index}" + (f"-{s_kind}{t_kind}" if members(plan) else "")
            out.append(
                obj(
                    CHAOS_API,
                    "NetworkChaos",
                    meta(name, plan.namespace(c.src), plan.labels(c.src, "wan"), annotations),
                    spec={
                        "action": "netem",
                        "mode": "all",
                        "selector": src,
                        "direction": "to",
                        "target": {"mode": "all", "selector": dst},
                        **netem(c.shaping),
                    },
                )
            )
    return out


def wan(plan: TrialPlan) -> list[dict[str, Any]]:
    """The emulated WAN: present from Injecting until CleaningUp."""
    return [o for r in plan.region_names for c in plan.classes[r] for o in _class_objects(plan, c, "wan")]


def _cut(plan: TrialPlan, name: str, cut: list[str], duration: str) -> list[tuple[str, dict[str, Any]]]:
    others = [r for r in plan.region_names if r not in cut]
    out = []
    for s_kind, src in _pod_sets(plan, cut):
        for t_kind, dst in _pod_sets(plan, others):
            out.append(
                (
                    f"{name}-{s_kind}{t_kind}" if members(plan) else name,
                    {
                        "action": "partition",
                        "mode": "all",
                        "selector": src,
                        "direction": "both",
                        "target": {"mode": "all", "selector": dst},
                        "duration": duration,
                    },
                )
            )
    return out


@dataclass(frozen=True)
class FaultObjects:
    """A fault window as Chaos Mesh objects: applied at its start, replacing some WAN objects.

    ``ends_by_removal``: the operator deletes ``objects`` and re-applies
    ``replaces`` at the window's end (loss windows); partitions end by their
    own ``duration`` and dropout Schedules live until clean-up.
    """

    window: FaultWindow
    objects: list[dict[str, Any]]
    replaces: list[dict[str, Any]]
    ends_by_removal: bool


def _partition(plan: TrialPlan, w: FaultWindow) -> FaultObjects:
    ns = plan.namespace(w.regions[0])
    objs = [obj(CHAOS_API, "NetworkChaos",
                meta(name, ns, plan.labels(w.regions[0], "fault"), {names.A_START_AFTER: w.start}), spec=spec)
            for name, spec in _cut(plan, f"{w.name}-{_tag(plan)}", list(w.regions), w.duration)]
    return FaultObjects(w, objs, [], False)


def _dropout(plan: TrialPlan, w: FaultWindow) -> FaultObjects:
    ns = plan.namespace(w.regions[0])
    objs = [obj(CHAOS_API, "Schedule", meta(name, ns, plan.labels(w.regions[0], "fault"), {names.A_START_AFTER: w.start}),
                spec={"schedule": f"@every {w.every}", "type": "NetworkChaos", "historyLimit": 1,
                      "concurrencyPolicy": "Forbid", "networkChaos": spec})
            for name, spec in _cut(plan, f"{w.name}-{_tag(plan)}", list(w.regions), w.duration)]
    return FaultObjects(w, objs, [], False)


def _loss(plan: TrialPlan, w: FaultWindow) -> FaultObjects:
    """Every source region whose links change gets its whole outgoing shaping anew for the window."""
    during = {**plan.links, **w.links}
    window_classes = classes(during, plan.region_names)
    objs, replaced = [], []
    for src in w.sources:
        for c in window_classes[src]:
            objs += _class_objects(plan, c, w.name, {names.A_START_AFTER: w.start})
        for c in plan.classes[src]:
            replaced += _class_objects(plan, c, "wan")
    return FaultObjects(w, objs, replaced, True)


def faults(plan: TrialPlan) -> list[FaultObjects]:
    """The plan's fault timeline as objects (``wanwide.io/start-after``: counted from the start of the load)."""
    render = {"partition": _partition, "dropout": _dropout, "loss": _loss}
    return [render[w.kind](plan, w) for w in plan.faults]
