"""The report's Parquet store: partitioned by Benchmark/trial, incremental, queryable as documented."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.results.conftest import same_table
from wanwide.pipeline.results.ingest import discover, ingest_sources
from wanwide.pipeline.results.report import build_report
from wanwide.pipeline.results.store import ResultStore

REPO = Path(__file__).resolve().parents[2]
V12 = "mariadb-3-100ms-light-20261122.json"
OLD = "galera-9-300ms-high-results.json"


def _campaign(root: Path, data_dir: Path, bundle_factory, trials=("t000", "t001")) -> None:
    for i, t in enumerate(trials):
        bundle_factory(root, data_dir / V12, trial=t, params={"backend": ["mariadb", "galera"][i % 2],
                                                              "rtt_ms": 50 * i}, benchmark="delay-sweep")


def _garble_keeping_stat(path: Path) -> bytes:
    """Overwrite ``path`` with spaces of the same size and mtime (reading it again would fail)."""
    st, original = path.stat(), path.read_bytes()
    path.write_bytes(b" " * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return original


def test_one_more_trial_reads_only_its_bundle(tmp_path, data_dir, bundle_factory):
    src, store_dir = tmp_path / "b", tmp_path / "rep" / "parquet"
    _campaign(src, data_dir, bundle_factory)
    df1, first = ResultStore(store_dir).sync(discover([src]))
    assert len(first.read) == 2 and not first.reused
    files = sorted(p.relative_to(store_dir).as_posix() for p in store_dir.rglob("*.parquet"))
    assert [f.rsplit("/", 1)[0] for f in files] == ["delay-sweep/t000", "delay-sweep/t001"]
    # the stored bundles' JSON is unreadable now: only the new trial's may be read
    originals = {p: _garble_keeping_stat(p) for p in src.rglob("rally.json")}
    bundle_factory(src, data_dir / V12, trial="t002", params={"backend": "mariadb", "rtt_ms": 100},
                   benchmark="delay-sweep")
    srcs = discover([src])
    df2, second = ResultStore(store_dir).sync(srcs)
    assert [Path(k).parts[-3] for k in second.read] == ["t002"] and len(second.reused) == 2
    assert len(list(store_dir.rglob("*.parquet"))) == 3
    for p, raw in originals.items():
        p.write_bytes(raw)
    same_table(df2, ingest_sources(srcs))  # the same table as reading every bundle again
    assert len(df2) == len(df1) * 3 // 2


def test_changed_bundle_is_read_again_and_gone_ones_dropped(tmp_path, data_dir, bundle_factory):
    src, store_dir = tmp_path / "b", tmp_path / "parquet"
    _campaign(src, data_dir, bundle_factory, trials=("t000", "t001", "t002"))
    ResultStore(store_dir).sync(discover([src]))
    t1 = next(src.rglob("t001"))
    rally = next(t1.rglob("rally.json"))
    data = json.loads(rally.read_text())
    del data["tasks"][0]["subtasks"][0]["workloads"][0]["data"][0]  # one iteration fewer
    rally.write_text(json.dumps(data))
    shutil.rmtree(next(src.rglob("t002")))
    srcs = discover([src])
    df, sync = ResultStore(store_dir).sync(srcs)
    assert [Path(k).parts[-3] for k in sync.read] == ["t001"]
    assert [Path(k).parts[-3] for k in sync.reused] == ["t000"]
    assert [Path(k).parts[-3] for k in sync.dropped] == ["t002"]
    assert sorted(p.parent.name for p in store_dir.rglob("*.parquet")) == ["t000", "t001"]
    same_table(df, ingest_sources(srcs))


def test_bundles_and_files_mixed_reused_as_read(tmp_path, data_dir, bundle_factory):
    """Different parameter sets, a bundle without results, plain files of both formats: the
    table taken from the store is the table read from the JSON."""
    src = tmp_path / "b"
    _campaign(src, data_dir, bundle_factory)
    bundle_factory(src, None, trial="t009", params={"backend": "cockroachdb"}, benchmark="other")
    (src / "plain").mkdir()
    for name in (V12, OLD):
        shutil.copy(data_dir / name, src / "plain" / name)
    srcs = discover([src])
    fresh, _ = ResultStore(tmp_path / "s").sync(srcs)
    again, sync = ResultStore(tmp_path / "s").sync(srcs)
    assert not sync.read and len(sync.reused) == len(srcs) == 5
    same_table(again, fresh)
    same_table(again, ingest_sources(srcs))
    assert sorted(p.relative_to(tmp_path / "s").parts[0] for p in (tmp_path / "s").rglob("*.parquet")) == \
        ["_files", "_files", "delay-sweep", "delay-sweep"]


def test_report_inside_its_sources_twice(tmp_path, data_dir, bundle_factory):
    """`wanwide report DIR -o DIR/report` (what `results fetch` suggests), run again: the store
    and the report's own files are not taken for input."""
    src = tmp_path / "b"
    _campaign(src, data_dir, bundle_factory)
    first = build_report([src], src / "report", progress=False)
    second = build_report([src], src / "report", progress=False)
    same_table(second.table, first.table)
    assert len(discover([src])) == 2


def test_a_different_store_format_is_read_again(tmp_path, data_dir, bundle_factory):
    src = tmp_path / "b"
    _campaign(src, data_dir, bundle_factory)
    ResultStore(tmp_path / "s").sync(discover([src]))
    index = tmp_path / "s" / "_index.json.gz"
    data = json.loads(gzip.decompress(index.read_bytes()))
    index.write_bytes(gzip.compress(json.dumps({**data, "format": data["format"] - 1}).encode()))
    _, sync = ResultStore(tmp_path / "s").sync(discover([src]))
    assert len(sync.read) == 2 and not sync.reused


def _doc_blocks() -> list[str]:
    text = (REPO / "docs" / "results.md").read_text()
    section = text.split("### Querying the stored Parquet without Python loops", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_documented_queries_run_and_agree(tmp_path, data_dir, bundle_factory, monkeypatch):
    """docs/results.md's pandas and DuckDB examples, run as written on a report of two Benchmarks."""
    pytest.importorskip("duckdb")
    src = tmp_path / "b"
    _campaign(src, data_dir, bundle_factory, trials=("t000", "t001", "t002"))
    bundle_factory(src, data_dir / V12, trial="t000", params={"backend": "galera", "regions": 9},
                   benchmark="regions")  # other parameters: rtt_ms missing, regions added
    r = build_report([src], tmp_path / "report", progress=False, store_parquet_beside=False)
    monkeypatch.chdir(tmp_path)
    blocks = _doc_blocks()
    assert len(blocks) == 2
    ns: dict = {}
    for code in blocks:
        exec(compile(code, "docs/results.md", "exec"), ns)
    table = r.table
    ok = table[table["error_type"].isna()]
    want = ok.groupby(["param.backend", "scenario", "action"], observed=True)["action_duration"].agg(["mean", "size"])
    got = ns["means_db"].set_index(["backend", "scenario", "action"]).sort_index()
    assert len(got) == len(want)
    for key, row in want.iterrows():
        assert got.loc[key, "mean_s"] == pytest.approx(row["mean"], rel=1e-12, abs=1e-12), key
        assert got.loc[key, "n"] == row["size"], key
    totals = ok[ok["action"] == "Total"].groupby(["param.backend", "scenario"], observed=True)["action_duration"].mean()
    pd.testing.assert_series_equal(ns["means"], totals)
    assert set(ns["one"]["benchmark"].astype(str)) == {"delay-sweep"} and len(ns["one"]) == 3 * 27
    assert ns["per_action"].loc[("mariadb", 0), "Total"] == pytest.approx(
        ok[(ok["param.backend"] == "mariadb") & (ok["param.rtt_ms"] == 0) & (ok["action"] == "Total")]
        ["action_duration"].mean())


def _tiny_bundles(root: Path, n: int) -> None:
    """``n`` bundles of 2 iterations each, written directly (no pydantic per bundle)."""
    for i in range(n):
        d = root / "many" / f"t{i:05d}" / "r1" / f"attempt-1-20261122t000000z-{i:012x}"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({
            "schema": "wanwide.io/bundle/v1", "benchmark": "many", "trial": {"id": f"t{i:05d}", "index": i,
            "repetition": 0, "parameters": {"backend": ["mariadb", "galera"][i % 2], "i": i}},
            "region": "r1", "attempt": 1, "run_id": f"r{i}"}))
        data = [{"timestamp": 1.0 + k, "duration": 0.5, "idle_duration": 0.0, "error": [],
                 "atomic_actions": [{"name": "keystone_v3.fetch_token", "started_at": 1.0 + k,
                                     "finished_at": 1.4 + k, "children": []}]} for k in range(2)]
        (d / "rally.json").write_text(json.dumps({"info": {"format_version": "1.2"}, "tasks": [{"uuid": f"u{i}",
            "subtasks": [{"title": "s", "workloads": [{"scenario": {"KeystoneBasic.x": {}}, "data": data}]}]}]}))
        (d / "task.json").write_text("{}")


def test_thousands_of_tiny_bundles(tmp_path):
    """Discovery, a cold and a warm store on 2,000 bundles: every bundle, every row, nothing read twice."""
    _tiny_bundles(tmp_path / "b", 2000)
    srcs = discover([tmp_path / "b"])
    assert len(srcs) == 2000 and all(s.kind == "bundle" for s in srcs)
    df, cold = ResultStore(tmp_path / "s").sync(srcs)
    assert len(cold.read) == 2000 and len(df) == 2000 * 2 * 2
    assert df["param.i"].nunique() == 2000 and len(list((tmp_path / "s" / "many").iterdir())) == 2000
    again, warm = ResultStore(tmp_path / "s").sync(srcs)
    assert not warm.read and len(warm.reused) == 2000
    same_table(again, df)
