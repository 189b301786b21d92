"""A data set (``wanwide results export``) redraws the same report as the bundles it came from."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
from pathlib import Path

import pytest

from wanwide.pipeline.results import dataset
from wanwide.pipeline.results.ingest import IngestError
from wanwide.pipeline.results.report import build_report, export_dataset

WANWIDE = str(Path(sys.executable).with_name("wanwide"))
V12, GAL = "mariadb-3-100ms-light-20261122.json", "galera-9-300ms-high-results.json"


def _bundles(root: Path, data_dir: Path, make) -> Path:
    """Six runs: two backends × two RTTs, one repeated; database counters and RTT gauges in each."""
    k = 0
    for backend, rally in (("mariadb", V12), ("galera", GAL)):
        for rtt in ("0ms", "100ms"):
            for _rep in range(2 if rtt == "100ms" and backend == "mariadb" else 1):
                k += 1
                delay = 0.0 if rtt == "0ms" else 50.0
                net = {"requested": [{"src": "r1", "dst": "r2", "delay_ms": delay}, {"src": "r2", "dst": "r1", "delay_ms": delay}],
                       "measured": [{"src": "r1", "dst": "r2", "kind": "keystone", "median_ms": 2 * delay + 0.3,
                                     "p95_ms": 2 * delay + 0.5, "samples_ms": [2 * delay + 0.3]}]}
                db = {"backend": backend, "reads": 900 + k, "writes": 40 + k, "read_pct": 95.0, "write_pct": 5.0}
                make(root, data_dir / rally, trial=f"t{k:03d}", params={"backend": backend, "rtt": rtt},
                     run_id=f"20261126t1000{k:02d}z-00000000000{k}", database=db, network=net)
    return root


def _files(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file() and "parquet" not in p.parts}


def test_the_data_set_redraws_every_table_and_figure(tmp_path, data_dir, bundle_factory):
    src = _bundles(tmp_path / "bundles", data_dir, bundle_factory)
    a = build_report([src], tmp_path / "from-bundles", progress=False, store_parquet_beside=False)
    files = export_dataset([src], tmp_path / "data")
    assert [f.name for f in files] == ["dataset.json", "iterations.parquet", "runs.csv", "manifests.json.gz"]
    assert sum(f.stat().st_size for f in files) < 200_000
    meta = json.loads((tmp_path / "data" / "dataset.json").read_text())
    assert meta["format"] == dataset.FORMAT and meta["runs"] == 5 and meta["sources"] == ["bundles"]
    # nothing in the data set names this machine's paths
    assert str(tmp_path) not in (tmp_path / "data" / "runs.csv").read_text()
    b = build_report([tmp_path / "data"], tmp_path / "from-data", progress=False, store_parquet_beside=False)
    assert int((a.table["action"] == "Total").sum()) == int((b.table["action"] == "Total").sum()) > 0
    out_a, out_b = tmp_path / "from-bundles", tmp_path / "from-data"
    assert _files(out_a) == _files(out_b)
    tables = sorted(f for f in _files(out_a) if f.endswith(".csv"))
    assert {"summary.csv", "headline.csv", "load.csv", "runs.csv", "details.csv", "read_write.csv", "rtt.csv"} <= set(tables)
    assert any(t.startswith("tables/") for t in tables)
    differ = [t for t in tables if not filecmp.cmp(out_a / t, out_b / t, shallow=False)]
    assert differ == [], differ
    figures = [f for f in _files(out_a) if f.endswith(".png")]
    assert any(f.startswith("cdf-") for f in figures) and any(f.startswith("bars-") for f in figures)


def test_export_and_report_from_the_command_line(tmp_path, data_dir, bundle_factory):
    src = _bundles(tmp_path / "bundles", data_dir, bundle_factory)
    e = subprocess.run([WANWIDE, "results", "export", str(src), "-o", str(tmp_path / "data"), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert e.returncode == 0, e.stderr
    assert "data set: dataset.json, iterations.parquet, runs.csv, manifests.json.gz" in e.stdout
    r = subprocess.run([WANWIDE, "report", str(tmp_path / "data"), "-o", str(tmp_path / "rep"), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rep" / "summary.csv").is_file() and (tmp_path / "rep" / "index.html").is_file()


def test_a_data_set_mixed_with_bundles_or_of_another_format_is_refused(tmp_path, data_dir, bundle_factory):
    src = _bundles(tmp_path / "bundles", data_dir, bundle_factory)
    export_dataset([src], tmp_path / "data")
    mixed = subprocess.run([WANWIDE, "report", str(tmp_path / "data"), str(src), "-o", str(tmp_path / "rep"),
                            "--no-progress"], capture_output=True, text=True, timeout=300)
    assert mixed.returncode == 2 and "give data sets alone" in mixed.stderr, mixed.stderr
    meta = tmp_path / "data" / "dataset.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": "wanwide.io/dataset/v0"}))
    old = subprocess.run([WANWIDE, "report", str(tmp_path / "data"), "-o", str(tmp_path / "rep2"), "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert old.returncode == 2 and "format 'wanwide.io/dataset/v0'" in old.stderr, old.stderr


@pytest.mark.parametrize("name", ["iterations.parquet", "manifests.json.gz"])
def test_a_data_set_missing_a_file_says_which(tmp_path, data_dir, bundle_factory, name):
    export_dataset([_bundles(tmp_path / "bundles", data_dir, bundle_factory)], tmp_path / "data")
    (tmp_path / "data" / name).unlink()
    with pytest.raises(Exception, match=f"lacks {name}"):
        build_report([tmp_path / "data"], tmp_path / "rep", progress=False)


def test_sittings_exported_apart_merge_into_the_campaigns_data_set(tmp_path, data_dir, bundle_factory):
    """A campaign in sittings: each sitting's bundles exported alone, the data sets merged by exporting them
    together, give the report the bundles of all sittings give; a run given twice is refused."""
    import shutil

    whole = _bundles(tmp_path / "all" / "bundles", data_dir, bundle_factory)
    runs = sorted(m.parent for m in whole.rglob("manifest.json"))
    assert len(runs) == 5
    for k, run in enumerate(runs):  # sitting 1: the first two runs, sitting 2: the rest
        dest = tmp_path / ("s1" if k < 2 else "s2") / "bundles" / run.relative_to(whole)
        shutil.copytree(run, dest)
    export_dataset([tmp_path / "s1" / "bundles"], tmp_path / "d1")
    export_dataset([tmp_path / "s2" / "bundles"], tmp_path / "d2")
    export_dataset([tmp_path / "d1", tmp_path / "d2"], tmp_path / "merged")
    export_dataset([whole], tmp_path / "data")
    a = build_report([tmp_path / "data"], tmp_path / "rep-all", progress=False, store_parquet_beside=False)
    b = build_report([tmp_path / "merged"], tmp_path / "rep-merged", progress=False, store_parquet_beside=False)
    assert json.loads((tmp_path / "merged" / "dataset.json").read_text())["runs"] == 5
    assert int((a.table["action"] == "Total").sum()) == int((b.table["action"] == "Total").sum()) > 0
    tables = sorted(f for f in _files(tmp_path / "rep-all") if f.endswith(".csv"))
    differ = [t for t in tables if not filecmp.cmp(tmp_path / "rep-all" / t, tmp_path / "rep-merged" / t,
                                                     shallow=False)]
    assert differ == [], differ
    with pytest.raises(IngestError, match=r"3 run\(s\) in more than one data set, e\.g\. .*merged and .*d2\)"):
        export_dataset([tmp_path / "merged", tmp_path / "d2"], tmp_path / "twice")
    assert not (tmp_path / "twice").exists()
