"""The report's answers on a synthetic study whose answers are known: MariaDB's authenticate
waits for 22 round trips per RTT, Galera's for 1.1, high load costs 30 % — do the headline,
the summary and `wanwide compare` say so, with intervals that contain the truth, and do they
mark and leave out noisy trials?"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.results.synthetic import SCENARIO, study
from wanwide.pipeline.results.headline import growth, load_effect, numeric
from wanwide.pipeline.results.ingest import ingest_paths
from wanwide.pipeline.results.runs import noisy, runs_table
from wanwide.pipeline.results.stats import summarize

TRIPS = {"mariadb": 20, "galera": 1}  # fetch_token's round trips; validate_token adds a tenth


def median(backend: str, rtt: float, load: str) -> float:
    return (0.5 + TRIPS[backend] * rtt / 1000) * (1.3 if load == "high" else 1.0)


def _busy(k: int) -> dict | None:
    """Trial t005 ran beside a compiler: 40 % of the CPU went elsewhere."""
    return {"window_s": 60.0, "psi": True, "cpu_some_pct": 55.0 if k == 5 else 2.0,
            "foreign_cpu_pct": 40.0 if k == 5 else 1.0, "steal_pct": 0.0,
            "gate": {"threshold_pct": 10.0, "settle_s": 20.0, "waited_s": 20.0, "passed": True}}


@pytest.fixture(scope="module")
def syn(tmp_path_factory) -> Path:
    return study(tmp_path_factory.mktemp("syn"), median, run_sd=0.03, seed=3, contention=_busy)


@pytest.fixture(scope="module")
def table(syn):
    return ingest_paths([syn])


def test_numeric_parameters():
    assert [numeric(v) for v in ("100ms", "2s", "1.5%", "9", 3, "light", None)] == [100.0, 2000.0, 1.5, 9.0, 3.0,
                                                                                   None, None]


def test_headline_slopes_contain_the_round_trips(table):
    g = growth(table)
    tot = g[(g["action"] == "Total") & (g["parameter"] == "rtt")]
    assert len(tot) == 4  # 2 backends × 2 loads
    for _, r in tot.iterrows():
        true = TRIPS[r["backend"]] * 1.1 * (1.3 if r["load"] == "high" else 1.0)
        assert r["_lo"] <= true <= r["_hi"], (r["backend"], r["load"], r["slope"], true)
        assert r["significant"]
    # the answer to the study's question, in order: MariaDB grows far faster than Galera (20× here)
    light = tot[tot["load"] == "light"].set_index("backend")
    assert light.loc["mariadb", "_lo"] > 5 * light.loc["galera", "_hi"]


def test_load_effect_is_found_with_its_interval(table):
    le = load_effect(table)
    tot = le[le["action"] == "Total"]
    assert len(tot) == 6  # 2 backends × 3 RTTs
    ratios = tot["high_vs_light"].tolist()
    assert sum(r.endswith("~") for r in ratios) <= 2  # +30 % with 3 runs × 30 iterations: mostly found
    for text in ratios:  # "+29% [+12%, +47%]": the interval holds +30 %
        lo, hi = (float(x.strip(" %[]+~")) for x in text.split("[")[1].split(",")[:2])
        assert lo <= 30 <= hi, text


def test_summary_has_intervals_and_pools_repetitions(table):
    s = summarize(table)
    assert "repetition" not in s.columns  # a replicate, not a parameter
    row = s[(s["backend"] == "mariadb") & (s["rtt"] == "300ms") & (s["load"] == "light")
            & (s["action"] == "keystone_v3.fetch_token")].iloc[0]
    assert row["runs"] == 3 and row["count"] == 90 and row["ci_method"] == "t-over-runs"
    assert row["p50_ci_lo"] <= median("mariadb", 300, "light") <= row["p50_ci_hi"]
    assert row["mean_ci_lo"] < row["mean"] < row["mean_ci_hi"]


def test_noisy_trial_is_marked(syn):
    from wanwide.pipeline.results.ingest import bundle_manifests, discover

    runs = runs_table(bundle_manifests(discover([syn])))
    flagged = runs[runs["noisy"].astype(bool)]
    assert flagged["trial"].tolist() == ["t005"]
    assert "CPU used outside the experiment 40.0% > 10%" in flagged["noisy_why"].iloc[0]
    assert noisy({"cpu_some_pct": 30.0, "foreign_cpu_pct": None}, 10)[0] is True  # no foreign figure: pressure
    assert noisy({"cpu_some_pct": 30.0, "foreign_cpu_pct": 2.0}, 10)[0] is False  # the experiment's own load
    assert noisy({}, 10)[0] is None


def _wanwide(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("wanwide")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600)


def test_report_opens_with_the_headline_and_excludes_noisy_on_request(syn, tmp_path):
    p = _wanwide("report", str(syn), "-o", str(tmp_path / "all"), "--no-progress", "--no-store")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "all" / "report.md").read_text()
    assert md.index("## Headline") < md.index(f"## {SCENARIO}")
    assert "Warning: 1 trial(s) ran on a busy machine" in md and "syn/t005" in md
    assert list((tmp_path / "all").glob("headline-*rtt.png"))
    p = _wanwide("report", str(syn), "-o", str(tmp_path / "quiet"), "--no-progress", "--no-store", "--exclude-noisy")
    assert p.returncode == 0, p.stderr
    assert "left out of every table" in (tmp_path / "quiet" / "report.md").read_text()
    with open(tmp_path / "quiet" / "summary.csv") as fh:
        rows = list(csv.DictReader(fh))
    t005 = [r for r in rows if (r["backend"], r["rtt"], r["load"]) == ("mariadb", "0ms", "high")
            and r["action"] == "Total"][0]  # t005's point: one run fewer
    assert int(t005["runs"]) == 2


def test_compare_says_what_changed(tmp_path):
    base = study(tmp_path / "base", median, backends=("galera",), rtts=(0, 100), loads=("light",), seed=5)

    def slower(b: str, rtt: float, load: str) -> float:
        return median(b, rtt, load) * (1.5 if rtt == 100 else 1.0)

    new = study(tmp_path / "new", slower, backends=("galera",), rtts=(0, 100), loads=("light",), seed=6)
    p = _wanwide("compare", str(base), str(new), "--total-only", "--csv", str(tmp_path / "c.csv"))
    assert p.returncode == 0, p.stderr
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.startswith("backend=")}
    out = p.stdout
    assert "backend=galera, rtt=0ms, load=light authenticate_user_and_validate_token Total" in out
    with open(tmp_path / "c.csv") as fh:
        rows = {r["rtt"]: r for r in csv.DictReader(fh) if r["action"] == "Total"}
    assert rows["0ms"]["significant"] == "False" and "~" in out
    assert rows["100ms"]["significant"] == "True"
    assert float(rows["100ms"]["delta_lo"]) <= 0.5 <= float(rows["100ms"]["delta_hi"])
    assert "1 of 2 differ significantly" in out
    assert lines  # one line per group
    # Mann-Whitney over the runs' medians: 3 runs a side, all of new above base, is the smallest p
    # such a test can give (2 / C(6, 3) = 0.1): the interval, not the p, carries the verdict
    assert float(rows["100ms"]["p"]) == pytest.approx(0.1)


def test_compare_one_directory_backend_against_backend(syn, tmp_path):
    """MariaDB vs Galera from one directory: backend is what changes, not a key to match on; the
    relative difference of the medians is (0.5 + RTT·1)/(0.5 + RTT·20) − 1 at every load."""
    p = _wanwide("compare", str(syn), str(syn), "--base-where", "backend=mariadb", "--new-where", "backend=galera",
                 "--total-only", "--csv", str(tmp_path / "c.csv"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("backend: mariadb (base) -> galera (new)\n")
    assert "backend=" not in p.stdout
    assert "base: 1 noisy trial(s) included (--exclude-noisy leaves them out): syn/t005" in p.stderr
    assert "new:" not in p.stderr  # t005 is MariaDB's
    with open(tmp_path / "c.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["action"] == "Total"]
    assert len(rows) == 6  # 3 RTTs × 2 loads
    for r in rows:
        assert (r["backend_base"], r["backend_new"]) == ("mariadb", "galera")
        rtt = float(r["rtt"].removesuffix("ms")) / 1000
        true = (0.5 + TRIPS["galera"] * rtt) / (0.5 + TRIPS["mariadb"] * rtt) - 1
        assert float(r["delta_lo"]) <= true <= float(r["delta_hi"]), (r["rtt"], r["load"], r["delta"], true)
        assert r["significant"] == str(rtt > 0)
    p = _wanwide("compare", str(syn), str(syn), "--base-where", "backend=mariadb", "--new-where", "backend=galera",
                 "--total-only", "--exclude-noisy")
    assert p.returncode == 0 and "base: 1 noisy trial(s) left out: syn/t005" in p.stderr
    assert "n=90/3" in p.stdout and "n=60/2" in p.stdout  # t005's point lost one run


def test_compare_paired_cancels_what_a_repetition_shares(tmp_path):
    """A campaign whose repetitions differ by a factor exp(N(0, 0.4)) (sittings, machines) and whose 100 ms
    point is 5 % slower: compared unpaired the spread hides it; `--paired` bounds it within ±10 % and holds
    the truth, per repetition, and says how many repetitions paired."""

    def five(b: str, rtt: float, load: str) -> float:
        return 0.5 * (1.05 if rtt == 100 else 1.0)

    d = study(tmp_path / "c", five, backends=("galera",), rtts=(0, 100), loads=("light",), reps=4, n=60,
              sigma=0.1, block_sd=0.4, seed=11)
    args = ["compare", str(d), str(d), "--base-where", "rtt=0ms", "--new-where", "rtt=100ms", "--total-only"]
    p = _wanwide(*args, "--stat", "mean", "--csv", str(tmp_path / "u.csv"))
    assert p.returncode == 0, p.stderr
    q = _wanwide(*args, "--paired", "--csv", str(tmp_path / "p.csv"), "--plot", str(tmp_path / "p.png"))
    assert q.returncode == 0, q.stderr
    from matplotlib.image import imread

    assert imread(tmp_path / "p.png").shape[1] == 1100 and (tmp_path / "p.svg").stat().st_size > 0  # 10 in at 110 dpi
    assert "(4 blocks, 0 on one deployment)" in q.stdout and "t test over blocks" in q.stdout
    with open(tmp_path / "u.csv") as fh:
        u = next(r for r in csv.DictReader(fh) if r["action"] == "Total")
    with open(tmp_path / "p.csv") as fh:
        pr = next(r for r in csv.DictReader(fh) if r["action"] == "Total")
    assert float(u["delta_lo"]) < -0.10 or float(u["delta_hi"]) > 0.10  # unpaired: cannot bound it
    assert float(pr["delta_lo"]) <= 0.05 <= float(pr["delta_hi"])
    assert float(pr["delta_lo"]) >= -0.10 and float(pr["delta_hi"]) <= 0.10 and pr["blocks"] == "4/0"
    bad = _wanwide(*args, "--paired", "--stat", "median")
    assert bad.returncode == 2 and "--paired compares means" in bad.stderr


@pytest.mark.parametrize(("cond", "says"), [
    ("colour=red", "base has no parameter 'colour' (its parameters: backend, rtt, load)"),
    ("backend=cockroachdb", "no base result has backend=cockroachdb (its values: galera, mariadb)"),
    ("backend", "write NAME=VALUE, e.g. backend=mariadb"),
])
def test_compare_refuses_a_selection_that_selects_nothing(syn, cond, says):
    p = _wanwide("compare", str(syn), str(syn), "--base-where", cond)
    assert p.returncode == 2 and says in p.stderr, p.stderr


def test_succeeded_runs_of_a_failed_attempt_are_left_out_and_named(tmp_path):
    """The delay study's t033: a high-load attempt whose r2 and r3 failed at set-up while r1 ran its
    task alone, 3× faster than under the point's load. Its r1 run is not one of the point's."""
    import json

    from tests.results.synthetic import ACTIONS, write_bundle

    root = study(tmp_path / "s", median, backends=("galera",), rtts=(0,), loads=("high",), seed=7)
    params = {"backend": "galera", "rtt": "0ms", "load": "high"}
    rng = np.random.default_rng(8)
    alone = median("galera", 0, "high") / 3 * np.exp(rng.normal(0, 0.2, 30))
    write_bundle(root, "syn", "t900", 0, params, "r1", {ACTIONS[0]: alone, ACTIONS[1]: alone / 10}, run=900)
    r2 = write_bundle(root, "syn", "t900", 0, params, "r2", {ACTIONS[0]: alone, ACTIONS[1]: alone / 10}, run=901)
    (r2 / "rally.json").unlink()
    m = json.loads((r2 / "manifest.json").read_text())
    m["status"] = {"result": "failed", "reason": "RallySetupFailed"}
    (r2 / "manifest.json").write_text(json.dumps(m))
    p = _wanwide("report", str(root), "-o", str(tmp_path / "r"), "--no-progress", "--no-store")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert "the succeeded runs of 1 failed attempt(s)" in md and "syn/t900 attempt 1: r2 failed" in md
    with open(tmp_path / "r" / "summary.csv") as fh:
        tot = [r for r in csv.DictReader(fh) if r["action"] == "Total"][0]
    assert int(tot["runs"]) == 3 and int(tot["count"]) == 90  # the study's three runs, not t900's r1
    assert float(tot["p50_ci_lo"]) <= median("galera", 0, "high") * 1.1 <= float(tot["p50_ci_hi"])


def test_an_attempt_is_its_number_on_one_deployment():
    """study-9-high t040: attempt 1 (and 2) failed in every region on one lab deployment; the trial ran again in a
    later sitting on a new deployment, its attempt 1 succeeded in every region — those runs are the point's.
    An attempt with one failed region on one deployment still leaves its succeeded regions out."""
    import pandas as pd

    from wanwide.pipeline.results.runs import failed_attempt_runs

    rows = [("b", "t040", 1, "lab a, trial 2 on it", r, "failed", f"old-{r}") for r in ("r1", "r2")]
    rows += [("b", "t040", 1, "lab f, trial 1 on it", r, "succeeded", f"new-{r}") for r in ("r1", "r2")]
    rows += [("b", "t041", 1, "lab f, trial 2 on it", "r1", "succeeded", "x-r1"),
             ("b", "t041", 1, "lab f, trial 2 on it", "r2", "failed", "x-r2")]
    runs = pd.DataFrame(rows, columns=["benchmark", "trial", "attempt", "deployment", "region", "result", "run_id"])
    assert failed_attempt_runs(runs) == {"x-r1": "b/t041 attempt 1: r2 failed"}
    assert set(failed_attempt_runs(runs.drop(columns="deployment"))) == {"new-r1", "new-r2", "x-r1"}  # before
