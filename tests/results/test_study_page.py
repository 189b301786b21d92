"""docs/results-study.md's measured tables are what the committed data sets give (docs/data/study.py
reads them as `wanwide report` and `wanwide compare` do): a page edited by hand, or data changed
without the page, fails here."""

from __future__ import annotations

from pathlib import Path

from tests.docs_data import load

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _study():
    return load("study", DOCS / "data" / "study.py")


def test_every_block_of_the_page_is_regenerated_from_its_data_set():
    study = _study()
    rendered = study.render()
    on_page = study.page_blocks((DOCS / "results-study.md").read_text())
    assert set(rendered) == set(study.BLOCKS)
    assert (DOCS / "data" / "load-region" / "dataset.json").is_file()  # measured and committed: never lost
    assert set(on_page) == set(rendered), (sorted(on_page), sorted(rendered))
    for name, body in rendered.items():
        assert on_page[name] == body, f"docs/results-study.md block {name!r} differs from its data: " \
                                      f"run docs/data/study.py --write\n{body}"


def test_every_figure_of_the_page_is_what_wanwide_report_draws_from_the_data(tmp_path):
    """Item 5: the page's figures are `wanwide report DATA --where ...`'s (and `wanwide compare … --plot`'s),
    redrawn here from the committed data set and compared byte for byte with the committed PNG (a figure
    left stale after new data fails)."""
    import re

    study = _study()
    named = set(re.findall(r"\(img/study/([\w-]+)\.png\)", (DOCS / "results-study.md").read_text()))
    can = set(study.FIGURES) | set(study.COMPARED)
    assert named <= can, f"figures on the page that docs/data/study.py cannot draw: {named - can}"
    assert named & set(study.COMPARED), "the page shows no paired change as a figure"
    drawn: dict[tuple, Path] = {}
    for name in sorted(named & set(study.COMPARED)):
        png = study.draw(name, tmp_path / name)
        committed = DOCS / "img" / "study" / f"{name}.png"
        assert committed.is_file() and committed.read_bytes() == png.read_bytes(), \
            f"docs/img/study/{name}.png is not what the data gives: run docs/data/study.py --figures"
    for name in sorted(named - set(study.COMPARED)):
        data, conds, file = study.FIGURES[name]
        key = (data, tuple(conds))
        if key not in drawn:
            drawn[key] = tmp_path / str(len(drawn))
            study.draw(name, drawn[key])
        png = drawn[key] / file
        assert png.is_file(), f"wanwide report --where {' --where '.join(conds)} drew no {file}"
        committed = DOCS / "img" / "study" / f"{name}.png"
        assert committed.is_file() and committed.read_bytes() == png.read_bytes(), \
            f"docs/img/study/{name}.png is not what the data gives: run docs/data/study.py --figures"


def test_cpu_per_iteration_is_the_experiments_cpu_over_every_regions_iterations():
    """High load: a trial's runs share one window; its CPU (busy minus foreign, on every core) is divided by
    every region's iterations. Failed runs and runs without contention do not count."""
    study = _study()

    def m(trial, it, window, busy, foreign, result="succeeded", pressure=50.0):
        return {"benchmark": "b", "trial": {"id": trial}, "status": {"result": result}, "rally": {"iterations": it},
                "host": {"cpu_count": 2}, "contention": {"window_s": window, "busy_pct": busy,
                                                         "foreign_cpu_pct": foreign, "cpu_some_pct": pressure}}
    got = study.cpu_per_iteration([m("t0", 10, 100.0, 80.0, 5.0, pressure=40.0), m("t0", 10, 90.0, 80.0, 5.0, pressure=60.0),
                                   m("t1", 10, 100.0, 50.0, 0.0), m("t1", 10, 100.0, 99.0, 0.0, result="failed"),
                                   {"benchmark": "b", "trial": {"id": "t2"}, "status": {"result": "succeeded"},
                                    "rally": {"iterations": 5}, "contention": {}}])
    assert set(got) == {("b", "t0"), ("b", "t1")}
    assert abs(got[("b", "t0")][0] - 0.75 * 2 * 100 / 20) < 1e-9 and got[("b", "t0")][1] == 50.0
    assert abs(got[("b", "t1")][0] - 0.5 * 2 * 100 / 10) < 1e-9


def test_read_write_verdict_needs_every_run_to_agree():
    """The study: create_user_update_password writes most. Agrees only when its fewest writes are above every
    other scenario's most; contradicts only when another scenario writes more in every run; fewer than two
    runs of a scenario cannot tell."""
    import pandas as pd

    study = _study()
    names = [k.rsplit(".", 1)[-1] for k in study.STUDY_READ_PCT]

    def runs(shares: dict[str, list[float]]) -> pd.DataFrame:
        return pd.DataFrame([{"scenario": sc, "read_pct": r} for sc, rs in shares.items() for r in rs])

    base = {sc: [95.0, 95.5] for sc in names}
    assert "agrees" in study.rw_verdict(runs(base | {"create_user_update_password": [90.0, 90.5]}))
    assert "cannot tell**: the runs' ranges overlap" in study.rw_verdict(runs(base | {"create_user_update_password": [90.0, 95.2]}))
    said = study.rw_verdict(runs(base | {"create_user_update_password": [96.0, 96.5], "get_entities": [91.0, 91.2]}))
    assert "contradicts" in said and "get_entities" in said
    assert "n too small" in study.rw_verdict(runs(base | {"create_user_update_password": [90.0]}))
    assert "n too small" in study.rw_verdict(runs({sc: v for sc, v in base.items() if sc != "get_entities"}))


def test_layout_effect_takes_the_mesh_deployment_as_its_unit():
    """Mesh- against star-wired deployments of the same points: a mesh 20 % slower at every point is said
    slower with an interval around +20 %; the same within 2 % is no effect within ±10 %; one mesh deployment,
    or points without a star run, cannot tell; a mesh deployment's points count once, not once each."""
    import numpy as np
    import pandas as pd

    study = _study()

    def means(factors: dict[str, float], star=(1.0, 1.04), rtts=("0ms", "100ms", "300ms")) -> pd.DataFrame:
        rows = []
        for k, (dep, f) in enumerate(factors.items()):
            be, bench = ("mariadb" if k % 2 == 0 else "galera"), f"b{k}"  # one mesh deployment per point, as measured
            for rtt in rtts:
                for sc in ("auth", "write"):
                    base = 10.0 * (1 + int(rtt[:-2]) / 100)
                    rows.append(dict(benchmark=bench, backend=be, rtt=rtt, scenario=sc, mean=base * f, deployment=dep, layout="mesh"))
                    rows += [dict(benchmark=bench, backend=be, rtt=rtt, scenario=sc, mean=base * s, deployment=f"s{k}{j}",
                                  layout="star") for j, s in enumerate(star)]
        return pd.DataFrame(rows)

    ref = float(np.exp(np.log([1.0, 1.04]).mean()))
    per, s = study.layout_effect(means({"m1": 1.20 * ref, "m2": 1.22 * ref, "m3": 1.18 * ref, "m4": 1.21 * ref}))
    assert len(per) == 4 and set(per["points"]) == {6} and set(per["star_runs"]) == {2}
    assert s["verdict"] == "mesh slower" and s["n"] == 4 and s["lo"] > 1.1 and s["hi"] < 1.3 and abs(s["ratio"] - 1.2025) < 0.01
    _, s = study.layout_effect(means({"m1": 1.01 * ref, "m2": 0.99 * ref, "m3": 1.02 * ref}))
    assert s["verdict"] == "no effect (within ±10%)" and 0.9 <= s["lo"] <= s["hi"] <= 1.1
    _, s = study.layout_effect(means({"m1": 0.8 * ref, "m2": 1.3 * ref}))
    assert s["verdict"] == "cannot tell" and s["lo"] < 1 < s["hi"]
    _, s = study.layout_effect(means({"m1": 1.5 * ref}))
    assert s["verdict"] == "cannot tell (n too small)" and not np.isfinite(s["lo"])
    no_star = means({"m1": 1.2, "m2": 1.2})
    per, s = study.layout_effect(no_star[no_star["layout"] == "mesh"])
    assert per.empty and s["n"] == 0 and "n too small" in s["verdict"]


def _effects():
    import sys

    sys.path.insert(0, str(DOCS / "data"))
    import study_effects

    return study_effects


def _findings_rows() -> list[list[str]]:
    study = _study()
    body = study.page_blocks((DOCS / "results-study.md").read_text())["study-findings"]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| #")]


def test_every_finding_of_the_studys_tables_is_a_row_and_controls_say_so():
    """Issue 46 item 2: table 3 (scale), table 4 (delay: MariaDB, Galera reads and writes, CockroachDB), the two
    ambiguous sentences quoted with the reading chosen, MariaDB's far regions under load; the rows whose request
    path has no shaped link or no commit are labelled controls, and every row has a verdict."""
    rows = _findings_rows()
    text = "\n".join(" | ".join(r) for r in rows)
    for needle in ("Table 3 (scale)", "Table 4 (delay): MariaDB 😺 — at light load", "Table 4 (delay): MariaDB 😺 — at high load",
                   "Galera 😺 reads — light load", "Galera 😾 writes — light load", "Galera 😾 writes — high load",
                   "CockroachDB 😾", "to the advantage of the centralized MariaDB", "rises from 120 to 475 milliseconds",
                   "Reading chosen"):
        assert needle in text, needle
    for r in rows:
        assert any(w in r[-1] for w in ("agrees", "contradicts", "cannot tell", "not measured", "control")), r
        if "Rally beside the database" in r[1] or "Galera 😺 reads" in r[1]:
            assert r[2] == "**control**", r
    assert any("contradicts the study's verdict" in r[-1] and "far regions" in r[1] for r in rows)


def test_the_verdicts_are_read_at_the_family_level():
    """Issue 46 item 4: the level printed under the findings is Bonferroni over the intervals the table reads
    (the rows whose verdict interval is not '—')."""
    import re

    from wanwide.pipeline.results.ci import bonferroni

    study = _study()
    body = study.page_blocks((DOCS / "results-study.md").read_text())["study-findings"]
    m = sum(1 for r in _findings_rows() if r[5] != "—")
    said = re.search(r"(\d+) intervals carry a verdict in this table; each verdict is read from its interval at ([\d.]+)%", body)
    assert said and int(said[1]) == m and abs(float(said[2]) / 100 - bonferroni(m)) < 5e-5


def test_far_minus_near_cancels_a_queue_both_regions_share():
    """Two trials whose every region is slowed by the same CPU queue (+5 s in the second): far − r1 is the WAN's
    share alone, the same in both; its variance is the two means' together."""
    import pandas as pd

    se = _effects()
    base = {"benchmark": "b", "scenario": "s", "action": "Total", "n": 10}
    far = pd.DataFrame([base | {"trial": t, "mean": 17.0 + q, "var": 1.0} for t, q in (("t0", 0.0), ("t1", 5.0))])
    near = pd.DataFrame([base | {"trial": t, "mean": 1.0 + q, "var": 4.0} for t, q in (("t0", 0.0), ("t1", 5.0))])
    d = se.far_minus_near(far, near)
    assert d["mean"].tolist() == [16.0, 16.0] and d["var"].tolist() == [0.5, 0.5] and set(d["n"]) == {1}


def test_a_size_comparison_pairs_a_round_of_each_benchmark_on_one_machine():
    """The same round where both ran it on a machine; else the rounds each ran there, in order (a sitting of one
    round of each on a new machine); a round alone on its machine pairs with nothing, and never across machines."""
    import pandas as pd

    se = _effects()
    small = pd.DataFrame({"round": [0, 1, 6, 5], "machine": ["A", "A", "C", "B"]})
    big = pd.DataFrame({"round": [0, 2, 5, 7], "machine": ["A", "A", "B", "C"]})
    s, b = se.size_pairs(small, big)
    assert s["pair"].tolist() == ["0", "1~2", "6~7", "5"] and b["pair"].tolist() == ["0", "1~2", "5", "6~7"]
    # round 6 of the small one alone on B (its partner's round 6 ran on A, since gone): no block
    lone_s, lone_b = se.size_pairs(pd.DataFrame({"round": [6], "machine": ["B"]}),
                                   pd.DataFrame({"round": [6, 7], "machine": ["A", "C"]}))
    blocks = [set(zip(f["pair"], f["machine"], strict=True)) for f in (lone_s, lone_b)]
    assert blocks[0] & blocks[1] == set()


def test_the_machine_decides_where_the_cpu_queue_is_not_shared_or_saturates_both():
    se = _effects()
    assert se.machine_decides(52.0, 3.0)  # Galera's 45 members queue, MariaDB's side does not
    assert se.machine_decides(100.0, 99.0)  # both saturated: the times follow the CPU per iteration
    assert not se.machine_decides(12.0, 2.0)  # a little queue on one side: below the threshold
    assert not se.machine_decides(30.0, 25.0)  # a queue both carry alike


def test_the_actions_sum_is_the_studys_completion_time():
    """Per successful iteration the sum of its top-level actions (what the study stacks), beside Rally's Total."""
    import pandas as pd

    se = _effects()
    rows = []
    for it, (a, b, total, err) in enumerate(((1.0, 2.0, 4.0, None), (1.5, 2.5, 5.0, None), (9.0, 9.0, 20.0, "Timeout"))):
        for action, dur, depth in (("Total", total, 0), ("keystone_v3.fetch_token", a, 0), ("keystone_v3.validate_token", b, 0),
                                   ("inner", 0.5, 1)):
            rows.append({"benchmark": "b", "trial_id": "t", "region": "r1", "run_id": "x", "scenario": "s", "iteration": it,
                         "action": action, "action_name": action, "action_depth": depth, "action_duration": dur, "error_type": err})
    t = se.with_actions(pd.DataFrame(rows))
    got = t[t["action"] == se.ACTIONS].sort_values("iteration")["action_duration"].tolist()
    assert got == [3.0, 4.0]


def test_cpu_per_iteration_takes_the_runners_own_cpu_where_it_recorded_it():
    """From issue 46 on a run records the experiment's CPU-seconds (contention.own_cpu_s): used as recorded,
    not rebuilt from percentages."""
    study = _study()
    m = {"benchmark": "b", "trial": {"id": "t"}, "status": {"result": "succeeded"}, "rally": {"iterations": 20},
         "host": {"cpu_count": 2}, "contention": {"window_s": 100.0, "busy_pct": 90.0, "foreign_cpu_pct": 0.0,
                                                  "own_cpu_s": 50.0, "cpu_some_pct": 10.0}}
    assert study.cpu_per_iteration([m])[("b", "t")] == (2.5, 10.0)


def test_the_wan_table_says_what_the_pair_watch_measured_during_the_load():
    """The WAN table's last column: the trials whose load had the pair watch, the fewest pairs each watched, the
    probes sent and lost (an unanswered probe is a sample without a time), and the medians against the plan's
    round trip. Two trials of one 3-region group, one without the watch (made up, derived by hand):
    t001 watches 3 pairs, 10 probes each, one lost on r1 → r3; medians 100.4, 99.8, 101.0 against 100;
    t002 has none: 1 of 2 trials, 3 of 3 pairs, 30 probes, 1 lost, median − asked −0.2 to +1.0 ms."""
    se = load("study_effects", DOCS / "data" / "study_effects.py")

    def pair(src: str, dst: str, median: float, lost: int = 0) -> dict:
        return {"src": src, "dst": dst, "kind": "database", "sent": 10, "median_ms": median, "requested_rtt_ms": 100,
                "samples": [[i, None if i < lost else median] for i in range(10)]}
    params = {"backend": "galera", "regions": "3", "load": "light"}
    watched = {"benchmark": "b", "trial": {"id": "t001", "parameters": params},
               "network": {"during": {"pairs": [pair("r1", "r2", 100.4), pair("r1", "r3", 99.8, lost=1),
                                                pair("r2", "r3", 101.0)]}}}
    plain = {"benchmark": "b", "trial": {"id": "t002", "parameters": params}, "network": {}}
    (row,) = se.wan_checked([watched, plain]).to_dict("records")
    assert row["trials"] == 2
    assert row["during"] == "1 of 2 trials: 3 of 3 pairs each, 30 probes, 1 lost, median − asked −0.2 to +1.0 ms"
    (none,) = se.wan_checked([plain]).to_dict("records")
    assert none["during"] == "not measured"
