"""Run order and repetitions: interleaved rounds in a seeded random order, recorded in every Trial,
runner configuration and lab group; the operator and the lab start trials in that order."""

from __future__ import annotations

import yaml

from wanwide.core.api.benchmark import BenchmarkSpec
from wanwide.core.lifecycle import deployments, in_run_order
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.matrix import expand, order_seed, run_order
from wanwide.core.plan.runner import Addresses, runner_config, task, warmup_task
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.controller.trialstate import to_start
from wanwide.providers.kubernetes.render import trial_object

TOPOLOGY = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"generate": {"count": 3}}}


def _bench(matrix: dict, name: str = "b", **workload) -> dict:
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name},
            "spec": {"topologyRef": "t", "matrix": matrix,
                     "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token", "times": 10}],
                                  **workload}}}


def _plans(matrix: dict, name: str = "b", **workload) -> list:
    docs = load_documents([yaml.safe_dump_all([TOPOLOGY, _bench(matrix, name, **workload)])])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))


def test_sequential_is_the_index_order():
    assert run_order(3, 2, "Sequential", 1) == [0, 1, 2, 3, 4, 5]


def test_interleaved_runs_every_point_once_per_round_in_a_seeded_order():
    n, reps = 6, 3
    order = run_order(n, reps, "Interleaved", seed=42)
    assert sorted(order) == list(range(n * reps))
    rounds = [order[r * n:(r + 1) * n] for r in range(reps)]
    for r, rnd in enumerate(rounds):
        assert sorted(i // reps for i in rnd) == list(range(n))  # every point once
        assert all(i % reps == r for i in rnd)  # repetition r in round r
    assert len({tuple(i // reps for i in rnd) for rnd in rounds}) > 1  # each round shuffled anew
    assert run_order(n, reps, "Interleaved", seed=42) == order  # the seed decides
    assert run_order(n, reps, "Interleaved", seed=43) != order
    # over many seeds no point is always first: a cold first trial is spread over the values
    firsts = {run_order(n, reps, "Interleaved", s)[0] // reps for s in range(40)}
    assert firsts == set(range(n))


def test_seed_is_recorded_and_defaults_to_the_name():
    spec = BenchmarkSpec.model_validate(_bench({"rtt": ["0ms", "100ms"], "repetitions": 3})["spec"])
    assert order_seed(spec, "b") == order_seed(spec, "b") != order_seed(spec, "c")
    pts = expand(spec, "b")
    assert sorted(p.position for p in pts) == list(range(6)) and {p.seed for p in pts} == {order_seed(spec, "b")}
    fixed = BenchmarkSpec.model_validate(_bench({"rtt": ["0ms", "100ms"], "repetitions": 3, "seed": 7})["spec"])
    assert {p.seed for p in expand(fixed, "b")} == {7}


def test_trials_and_runner_configs_carry_their_position():
    plans = _plans({"backend": ["mariadb", "galera"], "rtt": ["0ms", "100ms"], "repetitions": 2})
    objs = [trial_object(p) for p in plans]
    assert sorted(o["spec"]["position"] for o in objs) == list(range(8))
    where = Addresses("http://k/v3", ("db", 3306), [], {(r, k): ("h", 1) for r in ("r1", "r2", "r3")
                                                          for k in ("keystone", "database")})
    cfg = runner_config(plans[3], "r1", where, start_at=None, local_dir="/tmp/x")
    assert cfg.trial.position == plans[3].position and cfg.trial.seed == plans[3].seed
    assert "repetition" in cfg.trial.parameters  # the bundle still says which repetition


def test_operator_starts_pending_trials_lowest_position_first():
    plans = _plans({"rtt": ["0ms", "50ms", "100ms"], "repetitions": 2})
    trials = [trial_object(p) for p in plans]
    started = to_start(trials, parallelism=2)
    want = sorted(trials, key=lambda t: t["spec"]["position"])[:2]
    assert [t["metadata"]["name"] for t in started] == [t["metadata"]["name"] for t in want]


def test_each_round_runs_on_fresh_deployments_one_per_key_in_the_plans_order():
    """The lab's deployments (core/lifecycle/order.py): round r (repetition r of every point, shuffled from the
    seed) runs on its own new deployments, one per backend, before round r + 1 starts; so every repetition
    is on fresh deployments and neither backend keeps one time of day."""
    plans = _plans({"backend": ["mariadb", "galera"], "rtt": ["0ms", "100ms"], "load": ["light", "high"],
                    "repetitions": 3})
    ordered = in_run_order(plans)
    assert [p.position for p in ordered] == list(range(24))
    gs = deployments(plans)
    assert len(gs) == 6 and [len(g) for g in gs] == [4] * 6
    assert [{p.repetition for p in g} for g in gs] == [{0}, {0}, {1}, {1}, {2}, {2}]
    for g in gs:
        assert len({p.backend for p in g}) == 1
        assert [p.position for p in g] == sorted(p.position for p in g)
        assert sorted((p.parameters["rtt"], p.parameters["load"]) for p in g) == \
            [("0ms", "high"), ("0ms", "light"), ("100ms", "high"), ("100ms", "light")]
    # each round's first backend is the one its shuffled order starts with: not always the same one
    firsts = [gs[2 * r][0].backend for r in range(3)]
    assert firsts == [next(p for p in ordered if p.repetition == r).backend for r in range(3)]
    assert [[p.id] for p in in_run_order(plans)] == [[p.id for p in g] for g in deployments(plans, fresh=True)]


def test_the_lab_no_longer_runs_every_trial_of_a_backend_in_one_sitting():
    """The old grouping (one deployment per key for the whole Benchmark) ran all MariaDB trials, then all
    Galera trials: the backend lined up with the time of day."""
    plans = _plans({"backend": ["mariadb", "galera"], "rtt": ["0ms", "100ms"], "repetitions": 3, "seed": 11})
    sequence = [p.backend for g in deployments(plans) for p in g]
    switches = sum(a != b for a, b in zip(sequence, sequence[1:], strict=False))
    assert switches >= 3  # at least once per round, where the old grouping switched once


def test_warmup_is_its_own_unmeasured_task():
    (p,) = _plans({}, warmup={"times": 3})
    measured = task(p, "r1")
    assert all(not st["title"].startswith("warmup") for st in measured["subtasks"])
    warm = warmup_task(p, "r1")
    assert warm is not None and [st["runner"]["constant"]["times"] for st in warm["subtasks"]] == [3]
    where = Addresses("http://k/v3", ("db", 3306), [], {(r, k): ("h", 1) for r in ("r1", "r2", "r3")
                                                          for k in ("keystone", "database")})
    assert runner_config(p, "r1", where, start_at=None, local_dir="/x").warmup_task == warm
    assert runner_config(p, "r1", where, start_at=None, local_dir="/x", new_deployment=False).warmup_task is None
    (off,) = _plans({}, warmup={"times": 0})
    assert warmup_task(off, "r1") is None


def test_several_benchmarks_run_round_by_round_in_a_seeded_order():
    """A campaign of several Benchmarks (the study's sizes, each its own repetitions): every Benchmark's
    round 0 before any round 1, the Benchmarks of a round in an order drawn from their seeds, so a size
    does not keep one time of day; a Benchmark with fewer repetitions simply drops out of later rounds."""
    def bench(name: str, reps: int, seed: int) -> list:
        return _plans({"backend": ["mariadb", "galera"], "rtt": ["0ms", "100ms"], "repetitions": reps,
                       "seed": seed}, name)
    plans = bench("three", 5, 1) + bench("nine", 3, 2) + bench("many", 2, 3)
    gs = deployments(plans)
    assert len(gs) == 2 * (5 + 3 + 2) and all(len(g) == 2 for g in gs)  # one per backend and round
    rounds = [g[0].repetition for g in gs]
    assert rounds == sorted(rounds)  # round by round
    per_round = {}
    for g in gs:
        per_round.setdefault(g[0].repetition, []).append(g[0].benchmark)
    assert {r: set(b) for r, b in per_round.items()} == {0: {"three", "nine", "many"}, 1: {"three", "nine", "many"},
                                                       2: {"three", "nine"}, 3: {"three"}, 4: {"three"}}
    # drawn from the seeds: over seeds, each Benchmark comes first in some round 0 (not the listed order)
    firsts = {deployments(bench("three", 1, s) + bench("nine", 1, s + 100))[0][0].benchmark for s in range(12)}
    assert firsts == {"three", "nine"}
    assert deployments(plans) == gs  # the seeds decide
    for g in gs:  # within a Benchmark's round its own seeded order still holds
        assert [p.position for p in g] == sorted(p.position for p in g)
    one_each = deployments(plans, fresh=True)
    assert sorted(p.id + p.benchmark for g in one_each for p in g) == sorted(p.id + p.benchmark for p in plans)
    assert all(len(g) == 1 for g in one_each)


def test_rounds_added_to_a_finished_campaign_continue_it():
    """``matrix.firstRepetition`` (``wanwide lab run --more-rounds``): the rounds added later take trial ids after
    the old ones (a merged data set keeps one id per trial), the round numbers after theirs, and each round the
    order it would have had in one longer campaign; every Benchmark of the campaign gets the same new round
    numbers, so a new round holds all of them (a block for comparisons between Benchmarks)."""
    from wanwide.core.plan.matrix import campaign_rounds, more_rounds

    matrix = {"backend": ["mariadb", "galera"], "rtt": ["0ms", "100ms", "300ms"], "seed": 5}
    old = _plans({**matrix, "repetitions": 3})
    more = _plans({**matrix, "repetitions": 2, "firstRepetition": 3})
    longer = _plans({**matrix, "repetitions": 5})
    assert sorted(p.index for p in more) == list(range(18, 30))  # after the old 0–17: no id twice
    assert {p.id for p in old}.isdisjoint(p.id for p in more)
    assert sorted({p.repetition for p in more}) == [3, 4] and {p.parameters["repetition"] for p in more} == {"3", "4"}

    def rounds(plans: list) -> dict:
        out: dict = {}
        for p in in_run_order(plans):
            out.setdefault(p.repetition, []).append((p.parameters["backend"], p.parameters["rtt"]))
        return out
    assert rounds(more) == {r: v for r, v in rounds(longer).items() if r >= 3}
    assert rounds(old) == {r: v for r, v in rounds(longer).items() if r < 3}  # the old rounds as they ran
    seq = _plans({**matrix, "repetitions": 2, "firstRepetition": 3, "order": "Sequential"})
    assert [p.index for p in in_run_order(seq)] == list(range(18, 30))

    # a campaign of Benchmarks with different rounds so far: the new rounds start after the longest
    three, nine = _plans({**matrix, "repetitions": 5}, "three"), _plans({**matrix, "repetitions": 3}, "nine")
    docs = load_documents([yaml.safe_dump_all([TOPOLOGY, _bench({**matrix, "repetitions": 5}, "three"),
                                               _bench({**matrix, "repetitions": 3}, "nine")])])
    first = campaign_rounds([b.spec for b in docs.benchmarks])
    assert first == 5
    added = [q for b in docs.benchmarks
             for q in plan(b.model_copy(update={"spec": more_rounds(b.spec, 2, first)}), docs.topology_for(b))]
    per_round: dict = {}
    for g in deployments(added):
        per_round.setdefault(g[0].repetition, set()).add(g[0].benchmark)
    assert per_round == {5: {"three", "nine"}, 6: {"three", "nine"}}
    for name, before in (("three", three), ("nine", nine)):
        assert {p.id for p in before}.isdisjoint(p.id for p in added if p.benchmark == name)
    try:
        more_rounds(docs.benchmarks[0].spec, 96, first)
    except ValueError as e:
        assert "firstRepetition + repetitions is more than 100" in str(e)
    else:
        raise AssertionError("101 rounds accepted")
