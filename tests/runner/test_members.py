"""The Galera member watch: what a bundle says each member did through a fault window.

Samples are what ``SHOW GLOBAL STATUS`` answers (or an error), every 2 s; the summary is what a
user reads to tell "the cut member left the primary component and came back" from "the cluster
was restarted"."""

from __future__ import annotations

from tests.plan.specs import benchmark
from wanwide.core.api.benchmark import Benchmark
from wanwide.core.api.topology import TopologySpec
from wanwide.core.contracts import FaultSpan
from wanwide.core.plan.runner import Addresses, runner_config
from wanwide.core.plan.trial import plan
from wanwide.pipeline.runner.members import Sample, brief, healed_at, restarts, runs, summary

CUT = FaultSpan(name="partition0", kind="partition", regions=["r2"], start_s=20, duration_s=40)


def _whole(t: float, up: int) -> Sample:
    return Sample(t, "Primary", "Synced", 3, up)


def _cluster(cut_member: list[Sample]) -> dict[str, list[Sample]]:
    """r1 and r3 keep a primary component of 2 during the cut (20-60 s), whole before and after."""
    survivor = [_whole(t, 1000 + t) if not 20 <= t < 60 else Sample(t, "Primary", "Synced", 2, 1000 + t)
                for t in range(0, 120, 2)]
    return {"r1": survivor, "r2": cut_member, "r3": list(survivor)}


def test_a_cut_member_that_rejoins_without_restarting():
    cut = [_whole(t, 500 + t) if t < 20 else Sample(t, error="timed out") if t < 60
           else Sample(t, "Primary", "Joined", 3, 500 + t) if t < 66 else _whole(t, 500 + t)
           for t in range(0, 120, 2)]
    doc = summary(_cluster(cut), [CUT])
    (w,) = doc["windows"]
    assert (w["start_s"], w["end_s"]) == (20, 60)
    assert w["members"]["r2"]["states_s"] == {"unreachable": 40.0}  # the 18 s answer stood until 20 s: not in it
    assert w["members"]["r1"]["states_s"] == {"Primary/Synced/2": 40.0}
    assert w["healed_after_s"] == 6  # r2 Synced in a cluster of 3 again at 66 s
    assert w["answered_after_s"] == 0  # it answered (Joined) from the window's end
    assert doc["restarts"] == {"r1": [], "r2": [], "r3": []}
    b = brief(doc)
    assert b["windows"][0]["unreachable"] == ["r2"] and b["windows"][0]["not_primary"] == []
    assert b["windows"][0]["restarted"] == [] and b["restarts"] == {"r1": 0, "r2": 0, "r3": 0}


def test_a_member_restarted_by_its_probe_shows_as_a_restart():
    # non-primary for 30 s (answers), killed, back with a fresh uptime at 70 s
    cut = [_whole(t, 500 + t) if t < 20 else Sample(t, "non-Primary", "Initialized", 1, 500 + t) if t < 50
           else Sample(t, error="refused") if t < 70 else _whole(t, t - 62) for t in range(0, 120, 2)]
    doc = summary(_cluster(cut), [CUT])
    assert doc["restarts"]["r2"] == [62]
    b = brief(doc)
    (w,) = b["windows"]
    assert w["not_primary"] == ["r2"] and w["unreachable"] == ["r2"] and w["restarted"] == ["r2"]
    assert w["healed_after_s"] == 10 and w["answered_after_s"] == 10  # refused until 70 s


def test_a_cluster_not_whole_by_the_end_of_the_watch_says_so():
    cut = [_whole(t, 500 + t) if t < 20 else Sample(t, "non-Primary", "Initialized", 1, 500 + t)
           for t in range(0, 120, 2)]
    doc = summary(_cluster(cut), [CUT])
    assert doc["windows"][0]["healed_after_s"] is None
    assert healed_at(_cluster(cut), 60) is None


def test_runs_compress_the_timeline_and_restarts_need_an_uptime_that_went_back():
    s = [_whole(0, 10), _whole(2, 12), Sample(4, error="x"), _whole(6, 16)]
    assert runs(s) == [[0, 2, "Primary/Synced/3"], [4, 4, "unreachable"], [6, 6, "Primary/Synced/3"]]
    assert restarts(s) == []  # an unanswered sample is not a restart
    assert restarts([_whole(0, 10), _whole(30, 3)]) == [27]


def test_dropouts_are_summarised_per_occurrence_and_only_windows_that_began():
    drop = FaultSpan(name="dropout0", kind="dropout", regions=["r2"], start_s=0, duration_s=10, every_s=50)
    doc = summary(_cluster([_whole(t, 500 + t) for t in range(0, 120, 2)]), [drop])
    assert [(w["occurrence"], w["start_s"], w["end_s"]) for w in doc["windows"]] == [(0, 50, 60), (1, 100, 110)]


def _config(backend: str, faults: dict | None = None):
    b = benchmark(backend, "uniform", faults=faults or {})
    topo = b["spec"].pop("topology")
    b["spec"]["topologyRef"] = "t"
    p = plan(Benchmark.model_validate(b), TopologySpec.model_validate(topo))[0]
    targets = {(r, k): (f"{k}-{r}.example", 3306 if k == "database" else 5000) for r in p.region_names
               for k in ("keystone", "database")}
    where = Addresses("http://ks/v3", targets[(p.region_names[0], "database")], [], targets,
                      members={r: (f"member-{r}.example", 3306) for r in p.region_names})
    return p, runner_config(p, p.region_names[0], where, start_at=None, local_dir="/r")


def test_the_plan_watches_every_galera_member_and_hands_over_the_fault_windows():
    p, cfg = _config("galera", {"partitions": [{"regions": ["r2"], "start": "20s", "duration": "40s"}]})
    assert [(m.region, m.host) for m in cfg.gauges.members] == [(r, f"member-{r}.example") for r in p.region_names]
    assert cfg.gauges.members_period_s == 2.0 and cfg.gauges.members_linger_s == 120
    (f,) = cfg.faults
    assert (f.name, f.regions, f.start_s, f.duration_s) == ("partition0", ["r2"], 20, 40)


def test_a_central_mariadb_has_no_members_to_watch():
    _, cfg = _config("mariadb")
    assert cfg.gauges.members == [] and cfg.faults == []


def test_beyond_45_members_the_watch_keeps_the_cut_ones_and_the_cluster_size():
    b = benchmark("galera", "uniform", faults={"partitions": [{"regions": ["r50"], "start": "20s", "duration": "40s"}]})
    b["spec"].pop("topology")
    b["spec"]["topologyRef"] = "t"
    p = plan(Benchmark.model_validate(b), TopologySpec.model_validate(
        {"generate": {"count": 60}, "network": {"default": {"rtt": "20ms"}}}))[0]
    known = {(r, k): (f"{k}-{r}", 1) for r in p.region_names for k in ("keystone", "database")}
    where = Addresses("http://ks/v3", ("db", 3306), [], known, members={r: (f"m-{r}", 3306) for r in p.region_names})
    cfg = runner_config(p, "r1", where, start_at=None, local_dir="/r")
    watched = [m.region for m in cfg.gauges.members]
    assert len(watched) == 45 and "r50" in watched and cfg.gauges.members_cluster_size == 60
    assert cfg.gauges.members_period_s == 9.0
    # whole means a cluster of all 60, not of the 45 watched
    whole45 = {r: [Sample(t, "Primary", "Synced", 45, 100 + t) for t in (0, 10)] for r in watched}
    assert healed_at(whole45, 0, size=60) is None and healed_at(whole45, 0) == 0


def test_a_member_that_does_not_answer_is_a_sample_timed_when_the_attempt_began():
    import socket

    from wanwide.core.contracts import MemberTarget
    from wanwide.pipeline.runner.members import read

    with socket.socket() as s:  # a port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ticks = iter([7.0, 9.0])
    got = read(MemberTarget(region="r2", host="127.0.0.1", port=port), "pw", lambda: next(ticks))
    assert not got.ok and got.t_s == 7.0 and got.label() == "unreachable" and "Can't connect" in got.error


def test_the_runner_probes_its_targets_and_the_members_through_the_load():
    """The plan tells each runner to probe its RTT targets and every watched Galera member during the load (at
    most 5 probes a second, every 2 s at least), with what the provider gives: the check in brief, a command for
    the shaper's counters."""
    from wanwide.core.lifecycle import probe_pairs, summary, verdict

    p, cfg = _config("galera")
    n = len(cfg.gauges.rtt_targets) + len(cfg.gauges.members)
    assert cfg.gauges.network_period_s == max(2.0, round(n / 5, 1)) and cfg.network_check == {}
    rows, _ = verdict(p, {})
    targets = {(r, k): (f"{k}-{r}.example", 5000) for r in p.region_names for k in ("keystone", "database")}
    where = Addresses("http://ks/v3", targets[(p.region_names[0], "database")], [], targets)
    cfg = runner_config(p, "r1", where, start_at=None, local_dir="/r", network_check=summary(rows),
                        shaper_counters=["python", "-m", "wanwide.providers.lab.counters", "/x/links.json"])
    assert cfg.gauges.shaper_counters[-1] == "/x/links.json" and cfg.network_check["rule"].startswith("RTT: ")
    assert [r["src"] for r in cfg.network_check["pairs"]] == [a for a, _ in probe_pairs(p)]
