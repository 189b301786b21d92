"""The run order, and which trials share a deployment.

Trials run in the plan's order (``spec.matrix.order``: interleaved rounds, each shuffled from the
recorded seed). A provider that can re-shape a running deployment (the lab) serves one *round* (a
repetition of every point) per deployment key: the round's trials of one key run together on one new
deployment, keys in the order they first come in the round; so every repetition runs on fresh
deployments and no parameter keeps one time of day. ``fresh``: a deployment per trial (for a provider
that deploys each trial anew).
"""

from __future__ import annotations

import json
import random

from wanwide.core.plan.trial import TrialPlan


def run_key(position: int | None, index: int) -> tuple[int, int]:
    """Where a trial comes in its Benchmark's run order (its position; else its index)."""
    return (index if position is None else position, index)


def in_run_order(trials: list[TrialPlan]) -> list[TrialPlan]:
    """Each Benchmark's trials in its run order, Benchmarks as first listed."""
    first: dict[str, int] = {}
    for i, p in enumerate(trials):
        first.setdefault(p.benchmark, i)
    return sorted(trials, key=lambda p: (first[p.benchmark], run_key(p.position, p.index)))


def deployment_key(p: TrialPlan) -> str:
    """What a deployment is made of: trials with equal keys differ only in what the WAN does (RTT, jitter,
    loss, rate, faults, dynamic Galera options) or how it is loaded, and may share one, re-shaped."""
    return json.dumps({
        "benchmark": [p.bench_namespace, p.benchmark],
        "backend": p.backend,
        "regions": p.region_names,
        "primary": p.primary_region,
        "database": p.spec.database.model_dump(mode="json"),
        "openstack": p.spec.openstack.model_dump(mode="json"),
        "server": p.database.server,
        "galera": p.database.galera_static if p.backend == "galera" else None,
    }, sort_keys=True)


def deployments(trials: list[TrialPlan], fresh: bool = False) -> list[list[TrialPlan]]:
    """``trials`` in run order, cut into the groups that each run on one new deployment, in the order they
    run: per Benchmark and round (an interleaved order's repetition; a sequential order is one round),
    the round's trials of one deployment key together; ``fresh``: one trial per deployment. Several
    Benchmarks run round by round (every Benchmark's round 0, then round 1, ...), the Benchmarks of a
    round in an order drawn from their seeds and the round: so no Benchmark keeps one time of day."""
    ordered = in_run_order(trials)
    rounds: dict[tuple[str, str, int], dict[str, list[TrialPlan]]] = {}
    for p in ordered:
        rnd = p.repetition if p.spec.matrix.order == "Interleaved" else 0
        groups = rounds.setdefault((p.bench_namespace, p.benchmark, rnd), {})
        key = deployment_key(p) + (f"#{p.id}" if fresh else "")
        groups.setdefault(key, []).append(p)
    benches = list(dict.fromkeys((ns, b) for ns, b, _ in rounds))
    if len(benches) == 1:
        return [g for gs in rounds.values() for g in gs.values()]
    seeds = {(p.bench_namespace, p.benchmark): p.seed for p in ordered}
    out: list[list[TrialPlan]] = []
    for rnd in sorted({r for _, _, r in rounds}):
        here = [b for b in benches if (*b, rnd) in rounds]
        rng = random.Random(f"{rnd}:" + ",".join(f"{ns}/{b}={seeds[(ns, b)]}" for ns, b in here))
        rng.shuffle(here)
        out += [g for b in here for g in rounds[(*b, rnd)].values()]
    return out


__all__ = ["deployment_key", "deployments", "in_run_order", "run_key"]
