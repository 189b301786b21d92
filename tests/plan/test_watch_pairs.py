"""Which pairs of regions are probed between themselves during the load (issue 46 item 5): every pair in a trial of
up to 12 regions; beyond, a random sample of a bounded size, seeded by the trial (the same plan, the same pairs),
half of it on the database's own paths; only the first load region's runner probes them, and only where the
provider lets it enter the regions' namespaces (the lab)."""

from __future__ import annotations

import itertools
import time

import yaml

from tests.plan.specs import benchmark
from wanwide.core.contracts import S3Target, WatchConfig
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.runner import (
    NETWORK_PROBES_PER_S,
    WATCH_PAIRS_MAX,
    Addresses,
    database_pairs,
    runner_config,
    watch_configs,
    watch_pairs,
    watch_sources,
)
from wanwide.core.plan.trial import TrialPlan, plan


def _plan(n: int, backend: str = "galera", load: str = "high", name: str | None = None) -> TrialPlan:
    doc = benchmark(backend, "uniform")
    doc["spec"]["topology"] = {"generate": {"count": n}, "network": {"default": {"rtt": "50ms"}}}
    doc["spec"]["faults"] = {}
    doc["spec"].pop("matrix", None)
    doc["spec"]["workload"] = {"load": load, "scenarios": [{"name": "authenticate_user_and_validate_token"}]}
    if name is not None:
        doc["metadata"]["name"] = name
    d = load_documents([yaml.safe_dump(doc)])
    b = d.benchmarks[0]
    return plan(b, d.topology_for(b))[0]


def test_a_small_trial_watches_every_pair():
    for n in (3, 7, 12):
        p = _plan(n)
        pairs, cov = watch_pairs(p)
        assert pairs == list(itertools.combinations(p.region_names, 2))
        assert cov == {"pairs": n * (n - 1) // 2, "of": n * (n - 1) // 2, "how": "every pair of regions"}


def test_beyond_the_bound_a_seeded_sample_half_on_the_databases_paths():
    p = _plan(45, "mariadb", "light")
    pairs, cov = watch_pairs(p)
    assert len(pairs) == len(set(pairs)) == WATCH_PAIRS_MAX and cov["of"] == 990
    db = set(database_pairs(p))
    assert len(db) == 44 and all(p.primary_region in pr for pr in db)
    on_db = [pr for pr in pairs if pr in db]
    assert len(on_db) == WATCH_PAIRS_MAX // 2, "half the sample on the central database's paths"
    assert f"{len(on_db)} of the 44 pairs the database's traffic crosses" in cov["how"]
    assert watch_pairs(_plan(45, "mariadb", "light")) == (pairs, cov), "the same plan, the same pairs"
    names = p.region_names
    assert all(names.index(a) < names.index(b) for a, b in pairs)
    # Galera: a member per region, every pair is a member pair; the sample spreads over the regions
    g, gcov = watch_pairs(_plan(45))
    assert len(g) == WATCH_PAIRS_MAX and f"{WATCH_PAIRS_MAX} of the 990 pairs" in gcov["how"]
    assert len({r for pr in g for r in pr}) > 30


def test_another_trial_draws_another_sample():
    a, _ = watch_pairs(_plan(20, name="one"))
    b, _ = watch_pairs(_plan(20, name="two"))
    assert len(a) == len(b) == WATCH_PAIRS_MAX and a != b


def test_the_sample_stays_bounded_and_quick_at_500_regions():
    p = _plan(500, "mariadb", "light")
    t = time.perf_counter()
    pairs, cov = watch_pairs(p)
    assert len(pairs) == WATCH_PAIRS_MAX and cov["of"] == 500 * 499 // 2
    assert time.perf_counter() - t < 5  # 124,750 pairs enumerated once (a bound, not a speed target)


def _where(p: TrialPlan) -> Addresses:
    targets = {(r, k): (f"{k}-{r}", 5000 if k == "keystone" else 3306) for r in p.region_names
               for k in ("keystone", "database")}
    return Addresses("http://ks/v3", targets[(p.region_names[0], "database")], [], targets)


def test_the_first_load_regions_runner_probes_the_pairs_from_inside_each_source_region():
    p = _plan(4)  # high load: a runner per region
    where = _where(p)
    netns = {r: f"/run/netns/ww-x-{r}" for r in p.region_names}
    first, second = p.load_regions[0], p.load_regions[1]
    cfg = runner_config(p, first, where, start_at=None, local_dir="/r", netns=netns)
    got = [(t.src, t.dst, t.kind, t.host, t.port, t.netns, t.rtt_ms, t.loss_pct) for t in cfg.gauges.pairs]
    assert got == [(a, b, "database", f"database-{b}", 3306, f"/run/netns/ww-x-{a}", 50.0, 0.0)
                   for a, b in itertools.combinations(p.region_names, 2)]
    assert cfg.gauges.pairs_coverage["how"] == "every pair of regions"
    probed = len(cfg.gauges.rtt_targets) + len(cfg.gauges.members) + len(cfg.gauges.pairs)
    assert cfg.gauges.network_period_s == max(2.0, round(probed / NETWORK_PROBES_PER_S, 1))
    # the other runners do not repeat them; a provider that cannot enter the namespaces (Kubernetes) gives none
    assert runner_config(p, second, where, start_at=None, local_dir="/r", netns=netns).gauges.pairs == []
    assert runner_config(p, first, where, start_at=None, local_dir="/r").gauges.pairs == []


def test_a_central_mariadb_is_probed_at_each_regions_keystone():
    p = _plan(3, "mariadb", "light")
    cfg = runner_config(p, p.load_regions[0], _where(p), start_at=None, local_dir="/r",
                        netns={r: f"/n/{r}" for r in p.region_names})
    assert {(t.src, t.dst, t.kind, t.port) for t in cfg.gauges.pairs} == {
        ("r1", "r2", "keystone", 5000), ("r1", "r3", "keystone", 5000), ("r2", "r3", "keystone", 5000)}


S3 = S3Target(endpoint="http://s3.example:9000", bucket="results", prefix="runs")


def test_where_the_runner_cannot_enter_the_regions_a_watch_per_source_probes_each_pair_once():
    """Kubernetes: a watch Job per source region; together they probe every pair once, at the other end's Keystone
    (the pair's link, as the network check crosses it), their first probes spread over a period; the first load
    region's runner is told whose documents to collect, the others and the lab's runner are not."""
    p = _plan(5)  # high load: a runner per region
    cfgs = watch_configs(p, _where(p), start_at="2026-12-01T10:00:00Z", attempt=2, results=S3, max_s=900)
    assert [c.region for c in cfgs] == watch_sources(watch_pairs(p)[0]) == p.region_names[:-1]
    got = [(c.region, t.region, t.kind, t.host, t.port, t.requested_rtt_ms) for c in cfgs for t in c.targets]
    assert got == [(a, b, "keystone", f"keystone-{b}", 5000, 50.0) for a, b in itertools.combinations(p.region_names, 2)]
    offsets = [c.offset_s for c in cfgs]
    assert offsets == sorted(set(offsets)) and offsets[0] > 0 and offsets[-1] < cfgs[0].period_s
    assert cfgs[0].period_s == max(2.0, round(10 / NETWORK_PROBES_PER_S, 1))
    keys = {c.key for c in cfgs}
    assert len(keys) == 4 and all("/_network/during-2/" in k and k.startswith("runs/") for k in keys)
    assert cfgs[0].done_key.endswith("/_network/during-2/done") and cfgs[0].done_key not in keys
    assert all(WatchConfig.model_validate_json(c.model_dump_json()) == c for c in cfgs)
    where, first, second = _where(p), p.load_regions[0], p.load_regions[1]
    want = runner_config(p, first, where, start_at=None, local_dir="/r", results=S3, pair_watch=True).gauges
    assert want.pair_watches.sources == watch_sources(watch_pairs(p)[0]) and want.pairs == []
    assert want.pair_watches.coverage == {"pairs": 10, "of": 10, "how": "every pair of regions"}
    assert want.pair_watches.wait_s >= 3 * cfgs[0].period_s
    assert runner_config(p, second, where, start_at=None, local_dir="/r", results=S3, pair_watch=True
                         ).gauges.pair_watches is None
    assert runner_config(p, first, where, start_at=None, local_dir="/r", pair_watch=True).gauges.pair_watches is None
    lab = runner_config(p, first, where, start_at=None, local_dir="/r", results=S3,
                        netns={r: f"/n/{r}" for r in p.region_names}).gauges
    assert lab.pair_watches is None and len(lab.pairs) == 10


def test_beyond_the_bound_the_watches_probe_the_stated_sample_and_no_more():
    p = _plan(45, "mariadb", "light")
    cfgs = watch_configs(p, _where(p), start_at="2026-12-01T10:00:00Z", attempt=1, results=S3, max_s=900)
    pairs, cov = watch_pairs(p)
    assert [(c.region, t.region) for c in cfgs for t in c.targets] == pairs
    assert len(pairs) == WATCH_PAIRS_MAX and all(c.coverage == cov for c in cfgs)
    assert cfgs[0].period_s == round(WATCH_PAIRS_MAX / NETWORK_PROBES_PER_S, 1)
