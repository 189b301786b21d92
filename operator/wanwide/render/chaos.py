"""Chaos Mesh objects: the WAN (one netem object per source region × link class × pod-set
kind), partition windows, periodic dropouts and extra-loss windows.

Every selector names the trial's own namespaces (or its own database pods) and
nothing else, so chaos can never reach outside the trial.
"""

from __future__ import annotations

from typing import Any

from ..api.units import fmt_ms, fmt_pct, fmt_rate, pct
from ..plan import names
from ..plan.latency import LinkClass, classes
from ..plan.links import OneWay
from ..plan.trial import TrialPlan
from .common import meta, obj
from .database import members

CHAOS_API = "chaos-mesh.org/v1alpha1"
A_REPLACES = "wanwide.io/replaces"
A_DURATION = "wanwide.io/duration"


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


def netem(shaping: OneWay, extra_loss: float = 0.0) -> dict[str, Any]:
    """The netem fields of one object: delay, loss and rate together, so none overrides another."""
    body: dict[str, Any] = {}
    if shaping.delay_ms or shaping.jitter_ms:
        body["delay"] = {"latency": fmt_ms(shaping.delay_ms), "jitter": fmt_ms(shaping.jitter_ms), "correlation": "0"}
    loss = min(100.0, shaping.loss_pct + extra_loss)
    if loss:
        body["loss"] = {"loss": fmt_pct(loss), "correlation": "0"}
    if shaping.rate_mbit is not None:
        body["rate"] = {"rate": fmt_rate(shaping.rate_mbit)}
    return body


def _class_objects(plan: TrialPlan, c: LinkClass, prefix: str, extra_loss: float = 0.0,
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
                        **netem(c.shaping, extra_loss),
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


def faults(plan: TrialPlan) -> list[dict[str, Any]]:
    """Timed faults; ``wanwide.io/start-after`` says when, counted from the start of the load."""
    f = plan.spec.faults
    out: list[dict[str, Any]] = []
    for i, p in enumerate(f.partitions):
        ns = plan.namespace(p.regions[0])
        for name, spec in _cut(plan, f"partition{i}-{_tag(plan)}", list(p.regions), p.duration):
            out.append(obj(CHAOS_API, "NetworkChaos",
                           meta(name, ns, plan.labels(p.regions[0], "fault"), {names.A_START_AFTER: p.start}),
                           spec=spec))
    for i, d in enumerate(f.dropouts):
        cut = list(d.regions) if d.regions else [r for r in plan.region_names if r != plan.primary_region]
        ns = plan.namespace(cut[0])
        for name, spec in _cut(plan, f"dropout{i}-{_tag(plan)}", cut, d.for_):
            out.append(
                obj(
                    CHAOS_API,
                    "Schedule",
                    meta(name, ns, plan.labels(cut[0], "fault"), {names.A_START_AFTER: "0s"}),
                    spec={
                        "schedule": f"@every {d.every}",
                        "type": "NetworkChaos",
                        "historyLimit": 1,
                        "concurrencyPolicy": "Forbid",
                        "networkChaos": spec,
                    },
                )
            )
    all_classes = classes(plan.links, plan.region_names, include_noop=True)
    for i, w in enumerate(f.loss_windows):
        extra = pct(w.loss)
        for r in w.regions:
            for c in all_classes[r]:
                base = [b for b in plan.classes[r] if b.shaping == c.shaping]
                replaced = [o["metadata"]["name"] for b in base for o in _class_objects(plan, b, "wan")]
                out.extend(
                    _class_objects(
                        plan, c, f"loss{i}", extra,
                        {names.A_START_AFTER: w.start, A_DURATION: w.duration, A_REPLACES: ",".join(replaced)},
                    )
                )
    return out
