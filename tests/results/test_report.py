"""Report numbers against an independent computation from the raw JSON."""

from __future__ import annotations

import csv
import json
import statistics

import pytest

from wanwide.pipeline.results.report import build_report, summarize

V12 = "mariadb-3-100ms-light-20261122.json"
AUTH = "KeystoneBasic.authenticate_user_and_validate_token"


def _raw_durations(path, scenario, action):
    """Durations of `action` in successful iterations, plain json + arithmetic."""
    raw = json.loads(path.read_text())
    out, n_it, n_failed = [], 0, 0
    for t in raw["tasks"]:
        for st in t["subtasks"]:
            for wl in st["workloads"]:
                if scenario not in wl["scenario"]:
                    continue
                for it in wl["data"]:
                    n_it += 1
                    if it["error"]:
                        n_failed += 1
                        continue
                    for a in it["atomic_actions"]:
                        if a["name"] == action:
                            out.append(a["finished_at"] - a["started_at"])
    return out, n_it, n_failed


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "rally"
    src = tmp_path_factory.mktemp("src")
    for name in (V12, "galera-9-300ms-high-results.json"):
        (src / name).write_text((data / name).read_text())
    out = tmp_path_factory.mktemp("out")
    return build_report([src], out, progress=False), src, out


def _rows(out):
    with open(out / "summary.csv") as fh:
        return list(csv.DictReader(fh))


def test_summary_against_raw(report):
    r, src, out = report
    rows = _rows(out)
    row = next(x for x in rows if x["backend"] == "mariadb" and x["scenario"] == AUTH
               and x["action"] == "keystone_v3.fetch_token")
    vals, n_it, n_failed = _raw_durations(src / V12, AUTH, "keystone_v3.fetch_token")
    assert int(row["count"]) == len(vals) == 3
    assert float(row["mean"]) == pytest.approx(statistics.mean(vals))
    assert float(row["std"]) == pytest.approx(statistics.stdev(vals))
    assert float(row["p50"]) == pytest.approx(statistics.median(vals))
    assert float(row["min"]) == pytest.approx(min(vals))
    assert float(row["max"]) == pytest.approx(max(vals))
    q = statistics.quantiles(vals, n=4, method="inclusive")
    assert float(row["p25"]) == pytest.approx(q[0]) and float(row["p75"]) == pytest.approx(q[2])
    assert float(row["failure_rate"]) == pytest.approx(n_failed / n_it) == pytest.approx(0.25)
    total = next(x for x in rows if x["backend"] == "mariadb" and x["scenario"] == AUTH and x["action"] == "Total")
    raw = json.loads((src / V12).read_text())
    durs = [it["duration"] for it in raw["tasks"][0]["subtasks"][0]["workloads"][0]["data"] if not it["error"]]
    assert float(total["mean"]) == pytest.approx(statistics.mean(durs))
    assert int(total["iterations"]) == 4 and int(total["failures"]) == 1


def test_summary_columns_and_points(report):
    r, _, out = report
    header = next(csv.reader((out / "summary.csv").read_text().splitlines()))
    assert header[:4] == ["backend", "regions", "latency_ms", "load"]
    assert header[-17:] == ["count", "mean", "mean_ci_lo", "mean_ci_hi", "p50", "p50_ci_lo", "p50_ci_hi", "std",
                            "min", "p25", "p75", "max", "runs", "ci_method", "iterations", "failures",
                            "failure_rate"]
    pts = {(x["backend"], x["scenario"]) for x in _rows(out)}
    assert ("galera", AUTH) in pts and ("mariadb", "KeystoneBasic.create_and_list_tenants") in pts


def test_report_files(report):
    r, src, out = report
    for f in ("summary.csv", "report.md", "index.html", "results.parquet", "read_write.csv", "rtt.csv"):
        assert (out / f).is_file(), f
    assert list(out.glob("bars-*.png")) and list(out.glob("cdf-*.png"))
    assert list((out / "tables").glob("*.csv"))
    assert (src / "results.parquet").is_file()  # stored beside the raw files
    html = (out / "index.html").read_text()
    assert "file names or a sidecar" in html
    md = (out / "report.md").read_text()
    assert "failure rate λ = 0.250" in md
    assert r.params_from_names


def test_bundles_read_write_and_rtt(tmp_path, data_dir, bundle_factory):
    db = {"backend": "mariadb", "reads": 965, "writes": 35, "read_pct": 96.5, "write_pct": 3.5}
    net = {"requested": [{"src": "r1", "dst": "r2", "delay_ms": 50.0}, {"src": "r2", "dst": "r1", "delay_ms": 50.0}],
           "measured": [{"src": "r1", "dst": "r2", "kind": "database", "median_ms": 101.2, "p95_ms": 104.0,
                         "samples_ms": [101.2, 100.9, 104.0]},
                        {"src": "r1", "dst": "r1", "kind": "keystone", "median_ms": 0.05, "p95_ms": 0.1,
                         "samples_ms": [0.05]}]}
    bundle_factory(tmp_path / "b", data_dir / V12, params={"backend": "mariadb", "regions": 3},
                   database=db, network=net)
    r = build_report([tmp_path / "b"], tmp_path / "out", progress=False, store_parquet_beside=False)
    rw = list(csv.DictReader((tmp_path / "out" / "read_write.csv").read_text().splitlines()))
    assert rw[0]["scenario"] == AUTH and float(rw[0]["read_pct"]) == 96.5
    assert float(rw[0]["study_read_pct"]) == 96.46
    rtt = list(csv.DictReader((tmp_path / "out" / "rtt.csv").read_text().splitlines()))
    far = next(x for x in rtt if x["dst"] == "r2")
    assert float(far["requested_rtt_ms"]) == 100.0 and float(far["measured_median_ms"]) == 101.2
    assert (tmp_path / "out" / "rtt.png").is_file()
    assert not r.params_from_names
    assert "Runs" in (tmp_path / "out" / "index.html").read_text()
    assert not (tmp_path / "b" / "results.parquet").exists()


def test_two_benchmarks_not_pooled(tmp_path, data_dir, bundle_factory):
    """Equal parameter points of two Benchmarks (e.g. t000 of each) stay apart in summary.csv and rtt.csv."""
    net = {"requested": [{"src": "r1", "dst": "r2", "delay_ms": 50.0}, {"src": "r2", "dst": "r1", "delay_ms": 50.0}],
           "measured": [{"src": "r1", "dst": "r2", "kind": "keystone", "median_ms": 100.9, "p95_ms": 101.0,
                         "samples_ms": [100.9]}]}
    for name in ("delay", "delay-300"):
        bundle_factory(tmp_path / "b", data_dir / V12, trial="t000", params={"backend": "mariadb", "rtt": "100ms"},
                       network=net, benchmark=name)
    build_report([tmp_path / "b"], tmp_path / "out", progress=False, store_parquet_beside=False)
    rows = _rows(tmp_path / "out")
    assert list(rows[0])[:3] == ["benchmark", "backend", "rtt"]
    totals = [x for x in rows if x["scenario"] == AUTH and x["action"] == "Total"]
    assert sorted(x["benchmark"] for x in totals) == ["delay", "delay-300"]
    assert all(int(x["iterations"]) == 4 for x in totals)  # not 8: one bundle each
    rtt = list(csv.DictReader((tmp_path / "out" / "rtt.csv").read_text().splitlines()))
    assert sorted((x["benchmark"], x["trial"]) for x in rtt) == [("delay", "t000"), ("delay-300", "t000")]
    # one describe table per Benchmark's point
    tables = sorted(p.name for p in (tmp_path / "out" / "tables").glob("*authenticate*"))
    assert len(tables) == 2 and any("delay-300" in t for t in tables), tables


def test_summarize_failed_only_action(data_dir):
    from wanwide.pipeline.results.ingest import ingest_file

    s = summarize(ingest_file(data_dir / "galera-9-300ms-high-results.json"))
    assert set(s["action"]) == {"Total", "keystone_v3.fetch_token", "keystone_v3.validate_token"}


def test_where_reports_only_the_selected_trials(tmp_path, data_dir, bundle_factory):
    """`wanwide report --where load=light --where rtt=0ms`: one slice of a campaign (the study's figure of
    sizes); tables, runs and figures hold only those trials, and a value nobody has is an error naming it."""
    from wanwide.pipeline.results.compare import SelectError

    for i, (load, rtt) in enumerate([("light", "0ms"), ("light", "100ms"), ("high", "0ms")]):
        bundle_factory(tmp_path / "b", data_dir / V12, trial=f"t{i}", run_id=f"20261122t100000z-00000000000{i}",
                       params={"backend": "mariadb", "load": load, "rtt": rtt})
    r = build_report([tmp_path / "b"], tmp_path / "out", progress=False, conds=["load=light", "rtt=0ms"])
    assert set(r.table["trial_id"]) == {"t0"}
    runs = list(csv.DictReader((tmp_path / "out" / "runs.csv").open()))
    assert [x["trial"] for x in runs] == ["t0"]
    assert {x["rtt"] for x in csv.DictReader((tmp_path / "out" / "summary.csv").open())} == {"0ms"}
    with pytest.raises(SelectError, match="--where 'rtt=5ms'.*0ms, 100ms"):
        build_report([tmp_path / "b"], tmp_path / "out2", progress=False, conds=["rtt=5ms"])
