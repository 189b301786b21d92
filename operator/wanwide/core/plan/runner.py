"""The runner's configuration for one load region: Rally task, gauges, results. Pure.

The plan decides everything in it; a provider only says where things are
(:class:`Addresses`) and what it adds about itself (versions, deployment).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from wanwide import __version__
from wanwide.core.api.scenarios import boots, uploads
from wanwide.core.api.units import pct, seconds
from wanwide.core.contracts import (
    CATALOG_TYPES,
    RALLY_POLL_OPTIONS,
    TINY_IMAGE_FILE,
    RunnerConfig,
    S3Target,
    SloSpec,
    WatchConfig,
    WatchTarget,
)
from wanwide.core.plan.latency import classes_of
from wanwide.core.plan.services import REJOIN_MARGIN_S
from wanwide.core.plan.trial import TrialPlan

PROBE_SAMPLES = 10
MEMBER_SAMPLES_PER_S = 5.0
"""The member watch samples at most this many members a second in all (3 members: every 2 s; 45: every 9 s)."""
NETWORK_PROBES_PER_S = 5.0
"""During the load the runner probes its RTT targets and watched members at most this many a second in all, every
2 s at least (3 regions: 6 targets every 2 s; 45 regions with members: ~60 every 12 s)."""
MAX_WATCHED_MEMBERS = 45
"""The study's largest Galera; beyond it the watch samples this many members (the runner's config stays small)."""
WATCH_PAIRS_MAX = 66
"""During the load at most this many pairs of regions are probed between themselves (every pair up to 12 regions;
beyond, a random sample of this many, half of it among the pairs the database's traffic crosses)."""


@dataclass(frozen=True)
class Addresses:
    """How one load region reaches the services, in a provider's terms."""

    keystone_url: str  # this region's Keystone (…/v3)
    database: tuple[str, int]  # the database endpoint this region's Keystone uses
    memcache_servers: list[str]  # this region's memcached (empty when caching is off)
    targets: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # (region, kind) → host, port
    # Galera: each region's member itself, answering whatever its state (not a Service that drops it
    # when it is not ready)
    members: dict[str, tuple[str, int]] = field(default_factory=dict)


RTT_TARGETS_PER_CLASS = 8
"""At most this many destinations of each of a region's link classes are gauged (all of them in a small
trial): the gauge and its config stay the size of the WAN's distinct links, not of its regions (500
regions: 998 targets and ~100 KB of config per runner otherwise, 500 times over)."""


def gauged_regions(plan: TrialPlan, region: str) -> list[str]:
    """The regions whose RTT ``region``'s runner measures: up to :data:`RTT_TARGETS_PER_CLASS` of each
    of its link classes (identical links are one class), spread evenly through the class and rotated by
    the region's place, so that across runners every destination of a class is gauged by someone."""
    names = plan.region_names
    place = names.index(region)
    out: list[str] = []
    for c in classes_of(plan.links, names, region, include_noop=True):
        k = min(RTT_TARGETS_PER_CLASS, len(c.dsts))
        step = len(c.dsts) / k
        out += [c.dsts[(int(i * step) + place) % len(c.dsts)] for i in range(k)]
    order = {r: i for i, r in enumerate(names)}
    return sorted(set(out), key=order.__getitem__)


def probe_targets(plan: TrialPlan, region: str) -> list[tuple[str, str]]:
    """What the runner of ``region`` measures the RTT to: (region, "keystone" | "database") for each
    gauged region (:func:`gauged_regions`).

    Each such region's Keystone; with a database member per region (Galera, CockroachDB), its member
    too. A central MariaDB is the same endpoint for all, so it is not a far target.
    """
    per_region_db = plan.backend != "mariadb"
    out = []
    for r in gauged_regions(plan, region):
        out.append((r, "keystone"))
        if per_region_db:
            out.append((r, "database"))
    return out


FLAVORS = {"tiny": {"ram": 64, "vcpus": 1, "disk": 1}, "small": {"ram": 128, "vcpus": 1, "disk": 1}}
"""The flavors Rally's ``flavors`` context makes for a scenario that boots (``small``: what a resize goes to)."""


def shared_image(region: str) -> str:
    """The public image ``region``'s boot scenarios share (made by its runner: pipeline/runner/images.py)."""
    return f"wanwide-tiny-{region}"


def catalog_copy(plan: TrialPlan, region: str) -> dict[str, Any] | None:
    """What ``region``'s catalog must hold of the control plane serving it, registered under that plane's region
    (a stretched plane's other regions: core/plan/controlplane.py); None where the plane is the region's own."""
    cp = plan.control_plane
    if cp is None or not cp.services:
        return None
    plane = cp.plane_of(region)
    if plane.name == region:
        return None
    types = [CATALOG_TYPES[s] for s in cp.services if s in CATALOG_TYPES]
    return {"source": plane.name, "types": types} if types else None


def shared_images(plan: TrialPlan, region: str) -> list[str]:
    """The images ``region``'s runner makes before its tasks: the shared tiny image when a scenario boots."""
    return [shared_image(region)] if any(boots(s.name) for s in plan.scenarios) else []


def nova_bits(region: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(default arguments, contexts) a Nova or Glance scenario needs in ``region``'s task: its flavors (named for the
    region: several Rally share a stretched control plane) and the tiny image, public and made by the runner (Rally's
    ``images`` context makes one per tenant under one name, which more than one tenant makes ambiguous). Servers
    boot without a port: their projects have no network (core/api/scenarios.py ``BOOTS_NEED_NEUTRON``). The
    scenario's own ``args`` win."""
    args: dict[str, Any] = {}
    ctx: dict[str, Any] = {}
    image = shared_image(region)
    flavor = {k: f"wanwide-{k}-{region}" for k in FLAVORS}
    if boots(name):
        ctx["flavors"] = [{"name": flavor["tiny"], **FLAVORS["tiny"]}]
        args["flavor"] = {"name": flavor["tiny"]}
        if name == "NovaServers.boot_and_rebuild_server":
            args["from_image"] = args["to_image"] = {"name": image}
        else:
            args["image"] = {"name": image}
        if "resize" in name:
            ctx["flavors"].append({"name": flavor["small"], **FLAVORS["small"]})
            args["to_flavor"] = {"name": flavor["small"]}
    if uploads(name):
        args.update(image_location=TINY_IMAGE_FILE, container_format="bare", disk_format="raw")
        if name == "GlanceImages.create_image_and_boot_instances":
            ctx["flavors"] = [{"name": flavor["tiny"], **FLAVORS["tiny"]}]
            args.update(flavor={"name": flavor["tiny"]}, number_instances=1)
    return args, ctx


def _subtask(region: str, s: Any, times: int, concurrency: int, title: str) -> dict[str, Any]:
    contexts: dict[str, Any] = {}
    if s.users:
        contexts["users"] = {"tenants": s.users[0], "users_per_tenant": s.users[1]}
    defaults, more = nova_bits(region, s.name)
    contexts.update(more)
    return {"title": title, "scenario": {s.name: {**defaults, **s.args}},
            "runner": {"constant": {"times": times, "concurrency": concurrency}}, "contexts": contexts}


def slo_spec(s: Any) -> SloSpec:
    """A scenario's objectives (``spec.workload[.scenarios[]].slo``) in seconds and percent."""
    o = s.slo
    return SloSpec(scenario=s.name, max_s=seconds(o.max_duration) if o.max_duration else None,
                   mean_s=seconds(o.max_mean_duration) if o.max_mean_duration else None,
                   percentile=o.percentile.p if o.percentile else None,
                   percentile_max_s=seconds(o.percentile.max) if o.percentile else None,
                   failure_rate_pct=pct(o.max_failure_rate))


def rally_sla(slo: SloSpec) -> dict[str, Any]:
    """The objectives Rally's SLA plugins check (a percentile is wanwide's: the runner checks it)."""
    rate = slo.failure_rate_pct
    sla: dict[str, Any] = {"failure_rate": {"max": int(rate) if float(rate).is_integer() else rate}}
    if slo.max_s is not None:
        sla["max_seconds_per_iteration"] = slo.max_s
    if slo.mean_s is not None:
        sla["max_avg_duration"] = slo.mean_s
    return sla


def task(plan: TrialPlan, region: str) -> dict[str, Any]:
    """The measured Rally task (v2) for one load region: one subtask per scenario, its SLA the scenario's
    objectives (``slo``; default: no failed iteration)."""
    subtasks = [{**_subtask(region, s, s.times, s.concurrency, s.name), "sla": rally_sla(slo_spec(s))}
                for s in plan.scenarios]
    return {"version": 2, "title": f"{plan.name} {region}", "tags": [plan.benchmark, plan.id, region],
            "subtasks": subtasks}


def warmup_task(plan: TrialPlan, region: str) -> dict[str, Any] | None:
    """The unmeasured warm-up (``workload.warmup``): each scenario ``times`` times at its concurrency,
    run before the first measured task on a new deployment; None when switched off."""
    warm = plan.spec.workload.warmup
    if warm is None or warm.times == 0 or not plan.scenarios:
        return None
    subtasks = [_subtask(region, s, warm.times, min(s.concurrency, warm.times), f"warmup: {s.name}")
                for s in plan.scenarios]
    return {"version": 2, "title": f"{plan.name} {region} warm-up", "tags": [plan.benchmark, plan.id, region, "warmup"],
            "subtasks": subtasks}


def watched_members(plan: TrialPlan, where: Addresses) -> list[str]:
    """Galera: the members the watch samples: all of them up to :data:`MAX_WATCHED_MEMBERS`, else the
    regions the faults cut off or make lossy, then others spread through the list."""
    if plan.backend != "galera" or not where.members:
        return []
    names = plan.region_names
    if len(names) <= MAX_WATCHED_MEMBERS:
        return list(names)
    faulted = list(dict.fromkeys(r for w in plan.faults for r in w.regions))[:MAX_WATCHED_MEMBERS]
    rest = [r for r in names if r not in faulted]
    k = MAX_WATCHED_MEMBERS - len(faulted)
    picked = set(faulted) | {rest[int(i * len(rest) / k)] for i in range(k)}
    return [r for r in names if r in picked]


def database_pairs(plan: TrialPlan) -> list[tuple[str, str]]:
    """The pairs of regions the database's own traffic crosses: with a member per region (Galera, CockroachDB)
    every pair (members replicate to each other); a central MariaDB, each region to the primary's."""
    names = plan.region_names
    if plan.backend == "mariadb":
        p = plan.primary_region
        return [(a, b) for a, b in itertools.combinations(names, 2) if p in (a, b)]
    return list(itertools.combinations(names, 2))


def watch_pairs(plan: TrialPlan) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """The pairs of regions probed between themselves during the load, each unordered pair once in the plan's order,
    and what was chosen (``coverage``: pairs, of, how). Every pair up to :data:`WATCH_PAIRS_MAX`; beyond, a random
    sample seeded by the trial's name and seed (the same plan, the same pairs): up to half of it drawn among the database's
    pairs (:func:`database_pairs`), the rest among all the others — so a fault or a shaping error on a member's
    path is as likely to be seen as on any other."""
    names = plan.region_names
    every = list(itertools.combinations(names, 2))
    if len(every) <= WATCH_PAIRS_MAX:
        return every, {"pairs": len(every), "of": len(every), "how": "every pair of regions"}
    key = f"{plan.name}/{plan.seed}/network-watch"
    rng = random.Random(key)
    db = database_pairs(plan)
    in_db = set(db)
    picked = rng.sample(db, min(len(db), WATCH_PAIRS_MAX // 2)) if len(db) < len(every) else []
    rest = [pr for pr in every if pr not in in_db] if picked else every
    picked += rng.sample(rest, min(len(rest), WATCH_PAIRS_MAX - len(picked)))
    order = {pr: i for i, pr in enumerate(every)}
    chosen = sorted(picked, key=order.__getitem__)
    n_db = sum(pr in in_db for pr in chosen)
    return chosen, {"pairs": len(chosen), "of": len(every),
                    "how": f"a random sample (seeded by {key!r}): {n_db} of the {len(db)} pairs the database's "
                           f"traffic crosses, {len(chosen) - n_db} of the {len(every) - len(db)} others"}


def _pair_rows(plan: TrialPlan, where: Addresses, kind: str, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """``pairs`` (:func:`watch_pairs`), each from its first region to the second's ``kind`` endpoint, with what the
    plan asks between the two (both delays; the share of round trips the two losses drop)."""
    out = []
    for a, b in pairs:
        there, back = plan.links[(a, b)], plan.links[(b, a)]
        out.append({"src": a, "dst": b, "kind": kind, "host": where.targets[(b, kind)][0],
                    "port": where.targets[(b, kind)][1], "rtt_ms": there.delay_ms + back.delay_ms,
                    "loss_pct": round(100 * (1 - (1 - there.loss_pct / 100) * (1 - back.loss_pct / 100)), 4)})
    return out


def pair_targets(plan: TrialPlan, where: Addresses, netns: dict[str, str]) -> list[dict[str, Any]]:
    """:func:`watch_pairs` as the runner probes them: from each pair's first region (entered through its network
    namespace, ``netns``: region → path) to the second's database member (a member per region) or Keystone — one
    address per region in the lab, so the same path as every service between the two."""
    kind = "keystone" if plan.backend == "mariadb" else "database"
    return [{**row, "netns": netns[row["src"]]} for row in _pair_rows(plan, where, kind, watch_pairs(plan)[0])]


def watch_period_s(n_pairs: int) -> float:
    """How often each of ``n_pairs`` watched pairs is probed during the load: every pair once a period,
    :data:`NETWORK_PROBES_PER_S` in all at most, every 2 s at least."""
    return max(2.0, round(n_pairs / NETWORK_PROBES_PER_S, 1))


def watch_configs(plan: TrialPlan, where: Addresses, *, start_at: str, attempt: int, results: S3Target,
                  max_s: float) -> list[WatchConfig]:
    """The watch Jobs' configurations where the runner cannot enter the other regions (Kubernetes): one per
    source region of :func:`watch_pairs`, probing its pairs' other ends at their Keystone's Service — the pair's
    link, as the network check before the load crosses it (a database member's pod is shaped by objects of its
    own with the same link's figures) —, their first probes spread over a period."""
    pairs, coverage = watch_pairs(plan)
    by_src: dict[str, list[dict[str, Any]]] = {}
    for row in _pair_rows(plan, where, "keystone", pairs):
        by_src.setdefault(row["src"], []).append(row)
    period = watch_period_s(len(pairs))
    return [WatchConfig(benchmark=plan.benchmark, trial=plan.id, region=src, attempt=attempt, start_at=start_at,
                        targets=[WatchTarget(region=r["dst"], kind=r["kind"], host=r["host"], port=r["port"],
                                             requested_rtt_ms=r["rtt_ms"], requested_loss_pct=r["loss_pct"])
                                 for r in got],
                        period_s=period, offset_s=round(period * (i + 1) / (len(by_src) + 1), 2),
                        max_s=max_s, coverage=coverage, results=results)
            for i, (src, got) in enumerate(by_src.items())]


def watch_sources(pairs: list[tuple[str, str]]) -> list[str]:
    """The regions a watch Job probes ``pairs`` from (:func:`watch_configs`), in the plan's order."""
    return list(dict.fromkeys(a for a, _ in pairs))


def fault_spans(plan: TrialPlan) -> list[dict[str, Any]]:
    """The trial's fault windows as the runner records them next to the members' states."""
    return [{"name": w.name, "kind": w.kind, "regions": list(w.regions), "start_s": w.start_s,
             "duration_s": w.duration_s, "every_s": w.every_s} for w in plan.faults]


def network_requested(plan: TrialPlan, region: str) -> list[dict[str, Any]]:
    """The one-way links between ``region`` and each region it gauges, both ways: what its RTT gauges
    compare with (every link of a trial would be n(n-1) entries, 35 MB of JSON at 500 regions)."""
    pairs = sorted([p for r in gauged_regions(plan, region) for p in ((region, r), (r, region))])
    return [{"src": a, "dst": b, "delay_ms": plan.links[(a, b)].delay_ms, "jitter_ms": plan.links[(a, b)].jitter_ms,
             "loss_pct": plan.links[(a, b)].loss_pct, "rate_mbit": plan.links[(a, b)].rate_mbit} for a, b in pairs]


def runner_config(
    plan: TrialPlan,
    region: str,
    where: Addresses,
    *,
    start_at: str | None,
    attempt: int = 1,
    results: S3Target | None = None,
    local_dir: str,
    namespace: str | None = None,
    versions: dict[str, str] | None = None,
    deployment: dict[str, Any] | None = None,
    new_deployment: bool = True,
    release: dict[str, Any] | None = None,
    contention: dict[str, Any] | None = None,
    network_check: dict[str, Any] | None = None,
    shaper_counters: list[str] | None = None,
    netns: dict[str, str] | None = None,
    pair_watch: bool = False,
) -> RunnerConfig:
    """The runner's configuration (docs/contracts.md); ``where`` holds the provider's addresses.

    The plan's rule for the warm-up: before the first measured task on a deployment. A provider
    says whether this trial's deployment is new (Kubernetes: always; the lab: its first trial).
    ``release`` (the lab's coordinator) replaces ``start_at``; ``contention`` names the
    experiment's own processes where the provider knows them; ``network_check`` the network check before
    the load in brief and ``shaper_counters`` a command printing the shaper's counters, where the provider has
    them (the lab: linkemu's and netem's per link; Kubernetes: the runner pod's own netem qdiscs); ``netns`` each
    region's network namespace where the runner can enter it (the lab): the first load region's runner then probes
    :func:`watch_pairs` between the regions themselves through the load too; ``pair_watch`` where it cannot
    (Kubernetes: watch Jobs, :func:`watch_configs`, probe them): the first load region's runner collects theirs.
    """
    gauge_db = None
    if plan.backend in ("mariadb", "galera"):
        host, port = where.database
        gauge_db = {"backend": plan.backend, "host": host, "port": port, "user": "root",
                    "password_env": "DB_ROOT_PASSWORD"}
    targets = [{"region": r, "kind": k, "host": where.targets[(r, k)][0], "port": where.targets[(r, k)][1]}
               for r, k in probe_targets(plan, region)]
    cfg: dict[str, Any] = {
        "benchmark": plan.benchmark,
        "namespace": namespace or plan.bench_namespace,
        "trial": {"id": plan.id, "index": plan.index, "repetition": plan.repetition, "parameters": dict(plan.parameters),
                  "position": plan.position, "seed": plan.seed},
        "region": region,
        "role": "load",
        "attempt": attempt,
        "keystone": {
            "url": where.keystone_url,
            "region_name": region,
            "username": "admin",
            "password_env": "OS_PASSWORD",
            "project_name": "admin",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
            "cache": plan.keystone.cache_section(where.memcache_servers),
            "rally_user": plan.spec.runner.rally_users == "Prepared",
        },
        "task": task(plan, region),
        "start_at": start_at,
        "max_start_skew_s": seconds(plan.spec.workload.max_start_skew),
        "gauges": {"database": gauge_db, "rtt_targets": targets, "samples": PROBE_SAMPLES},
        "network_requested": network_requested(plan, region),
        "results": {"local_dir": local_dir, "s3": None if results is None else results.model_dump()},
        "versions": {"wanwide": __version__, "database": plan.backend, **(versions or {})},
    }
    watched = watched_members(plan, where)
    if watched:
        cfg["gauges"].update(
            members=[{"region": r, "host": where.members[r][0], "port": where.members[r][1]} for r in watched],
            members_period_s=max(2.0, round(len(watched) / MEMBER_SAMPLES_PER_S, 1)),
            members_linger_s=float(REJOIN_MARGIN_S) if plan.faults else 0.0)
        if len(watched) < len(plan.region_names):
            cfg["gauges"]["members_cluster_size"] = len(plan.region_names)
    if plan.spec.workload.poll_interval is not None:
        cfg["rally_openstack"] = rally_polling(seconds(plan.spec.workload.poll_interval))
    if images := shared_images(plan, region):
        cfg["images"] = images
    if copy := catalog_copy(plan, region):
        cfg["catalog"] = copy
    if plan.faults:
        cfg["faults"] = fault_spans(plan)
    if plan.scenarios:
        cfg["slo"] = [slo_spec(s).model_dump(exclude_none=True) for s in plan.scenarios]
    if deployment:
        cfg["deployment"] = deployment
    warm = warmup_task(plan, region) if new_deployment else None
    if warm is not None:
        cfg["warmup_task"] = warm
    if release is not None:
        cfg["release"] = release
    if contention:
        cfg["contention"] = contention
    if netns and region == plan.load_regions[0]:
        _, coverage = watch_pairs(plan)
        cfg["gauges"].update(pairs=pair_targets(plan, where, netns), pairs_coverage=coverage)
    elif pair_watch and results is not None and region == plan.load_regions[0] and len(plan.region_names) > 1:
        pairs, coverage = watch_pairs(plan)
        cfg["gauges"]["pair_watches"] = {"sources": watch_sources(pairs), "coverage": coverage,
                                         "wait_s": max(90.0, 3 * watch_period_s(len(pairs)) + 60.0)}
    probed = len(targets) + len(cfg["gauges"].get("members") or []) + len(cfg["gauges"].get("pairs") or [])
    if probed:
        cfg["gauges"]["network_period_s"] = max(2.0, round(probed / NETWORK_PROBES_PER_S, 1))
    if shaper_counters:
        cfg["gauges"]["shaper_counters"] = list(shaper_counters)
    if network_check:
        cfg["network_check"] = network_check
    return RunnerConfig.model_validate(cfg)


def rally_polling(interval_s: float) -> dict[str, float]:
    """Rally's [openstack] options for ``spec.workload.pollInterval``: every server action's first wait and its
    interval between polls set to it (Rally's own: 1 or 2 s, then every 2 s)."""
    return dict.fromkeys(RALLY_POLL_OPTIONS, interval_s)


def config_json(cfg: RunnerConfig) -> dict[str, Any]:
    """The configuration as the runner reads it (only what was set: defaults stay the runner's)."""
    return cfg.model_dump(mode="json", exclude_unset=True)
