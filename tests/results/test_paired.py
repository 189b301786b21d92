"""Paired changes (pipeline/results/paired.py): the block's level cancels, the interval keeps its promise."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from wanwide.pipeline.results.compare import compare
from wanwide.pipeline.results.paired import paired_change, unit_means


def _units(means: list[float], deployments: list[str], var: float = 0.0, n: int = 100) -> pd.DataFrame:
    return pd.DataFrame({"round": range(len(means)), "machine": "m", "deployment": deployments,
                         "mean": means, "var": var, "n": n})


def test_a_blocks_level_cancels_where_an_unpaired_comparison_cannot_tell():
    """Three deployments at 8, 11 and 15 s, each 2 % slower at 300 ms: the paired change is +2 % within
    ±10 %; the same iterations compared unpaired (`wanwide compare`, runs as the unit) cannot tell."""
    rng = np.random.default_rng(1)
    levels, rows = [8.0, 11.0, 15.0], []
    for rep, level in enumerate(levels):
        for rtt, f in (("0ms", 1.0), ("300ms", 1.02)):
            for x in level * f * rng.lognormal(0, 0.05, 100):
                rows.append({"benchmark": "b", "trial_id": f"t{rep}{rtt}", "scenario": "s", "action": "Total",
                             "action_duration": x, "error_type": None, "region": "r1", "source": "x",
                             "param.rtt": rtt, "param.repetition": str(rep)})
    table = pd.DataFrame(rows)
    manifests = [{"benchmark": "b", "trial": {"id": f"t{rep}{rtt}", "repetition": rep},
                  "deployment": {"id": f"d{rep}"}, "host": {"boot_id": "abcdef0123"}}
                 for rep in range(3) for rtt in ("0ms", "300ms")]
    u = unit_means(table, manifests)
    p = paired_change(u[u["param.rtt"] == "0ms"], u[u["param.rtt"] == "300ms"], ["round", "machine"])
    assert p.blocks == 3 and p.shared == 3
    assert p.lo < 0.02 < p.hi and p.lo >= -0.10 and p.hi <= 0.10, p
    c = compare(table[table["param.rtt"] == "0ms"].drop(columns="param.repetition").copy(),
                table[table["param.rtt"] == "300ms"].drop(columns="param.repetition").copy(), "mean")
    assert c.iloc[0]["delta_lo"] < -0.10 or c.iloc[0]["delta_hi"] > 0.10  # unpaired: the levels' spread twice


def test_blocks_that_agree_by_chance_get_no_interval_narrower_than_their_iterations():
    u0 = _units([10.0, 20.0], ["a", "b"], var=4.0)
    u1 = _units([11.0, 22.0], ["a", "b"], var=4.0)
    p = paired_change(u0, u1, ["round", "machine"])
    assert math.isclose(p.value, 0.10, rel_tol=1e-9)
    # each log mean's iteration noise: var / (n mean²); over two blocks averaged
    se = math.sqrt(4 / (100 * 100) + 4 / (100 * 121) + 4 / (100 * 400) + 4 / (100 * 484)) / 2
    assert math.isclose(math.log1p(p.hi) - math.log(1.1), 1.959964 * se, rel_tol=1e-4)


def test_one_block_gives_no_interval_and_unmatched_blocks_are_left_out():
    p = paired_change(_units([10.0, 12.0], ["a", "b"]), _units([11.0], ["x"]), ["round", "machine"])
    assert p.blocks == 1 and p.shared == 0 and not p.defined and math.isclose(p.value, 0.1)
    assert paired_change(_units([10.0], ["a"]), _units([], []), ["round"]).blocks == 0


def test_a_machine_change_inside_a_round_splits_it():
    base = _units([10.0, 10.0], ["a", "b"])
    new = _units([20.0, 20.0], ["a", "c"])
    new.loc[1, "machine"] = "other"
    p = paired_change(base, new, ["round", "machine"])
    assert p.blocks == 1


def test_the_interval_covers_the_true_change_95_percent_of_the_time():
    """1 000 simulated campaigns of 3 blocks whose levels spread by a factor ~1.4 and whose change itself
    varies by block (sd 5 %): the interval holds the true +20 % in 92.5–97.5 % of them."""
    rng = np.random.default_rng(7)
    hits, sims = 0, 1000
    for _ in range(sims):
        level = np.exp(rng.normal(2.3, 0.35, 3))
        ratio = np.exp(np.log(1.2) + rng.normal(0, 0.05, 3))
        base = _units(list(level * np.exp(rng.normal(0, 0.01, 3))), ["a", "b", "c"], var=0.0)
        new = _units(list(level * ratio * np.exp(rng.normal(0, 0.01, 3))), ["a", "b", "c"], var=0.0)
        p = paired_change(base, new, ["round", "machine"])
        hits += p.lo <= 0.2 <= p.hi
    assert 0.925 <= hits / sims <= 0.975, hits / sims


def test_unit_means_keep_the_load_regions_asked_and_name_round_deployment_machine():
    rows = [{"benchmark": "b", "trial_id": "t0", "scenario": "s", "action": a, "action_duration": x, "error_type": e,
             "region": reg, "param.rtt": "0ms"}
            for reg, xs in (("r1", [1.0, 3.0]), ("r2", [10.0])) for x in xs
            for a, e in (("Total", None), ("keystone_v3.fetch_token", None))]
    rows.append({"benchmark": "b", "trial_id": "t0", "scenario": "s", "action": "Total", "action_duration": 99.0,
                 "error_type": "Timeout", "region": "r1", "param.rtt": "0ms"})
    m = [{"benchmark": "b", "trial": {"id": "t0", "repetition": 2}, "deployment": {"id": "d9"},
          "host": {"cpu_model": "EPYC", "boot_id": "0123456789"}}]
    u = unit_means(pd.DataFrame(rows), m, regions={"r1"})
    assert u[["trial", "round", "deployment", "machine", "mean", "n"]].to_dict("records") == [
        {"trial": "t0", "round": 2, "deployment": "d9", "machine": "EPYC · boot 01234567", "mean": 2.0, "n": 2}]
    assert unit_means(pd.DataFrame(rows), m)["mean"].tolist() == [14 / 3]


def test_a_deployment_not_recorded_is_not_counted_as_shared():
    p = paired_change(_units([10.0, 12.0], ["", "d"]), _units([11.0, 13.0], ["", "d"]), ["round", "machine"])
    assert p.blocks == 2 and p.shared == 1


def test_compare_lists_numbers_by_value_and_the_plot_keeps_its_ticks_apart():
    """3, 9, 45 regions in that order (not 3, 45, 9), and the forest plot's change ticks never overlap."""
    from wanwide.pipeline.results.figures import _spaced

    rows = [{"param.regions": n, "scenario": "s", "action": "Total", "action_duration": d, "error_type": None,
             "benchmark": "b", "trial_id": f"t{n}{i}", "source": "x"}
            for n in ("45", "3", "9") for i, d in enumerate((1.0, 1.1, 1.2))]
    t = pd.DataFrame(rows)
    assert compare(t.copy(), t.copy(), "mean")["regions"].tolist() == ["3", "9", "45"]
    ticks = _spaced([-0.5, -0.2, -0.1, 0.0, 0.1, 0.2, 0.5, 1.0])
    logs = np.log1p(ticks)
    assert 0.0 in ticks and (np.diff(logs) >= 0.15).all(), ticks
