"""Ingest of crafted Rally JSON fixtures (tests/data/rally)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from wanwide.pipeline.results.ingest import (
    IngestError,
    discover,
    ingest_bundle,
    ingest_file,
    ingest_paths,
    ingest_rally_json,
    params_from_filename,
    read_parquet,
    write_parquet,
)

V12 = "mariadb-3-100ms-light-20261122.json"
OLD = "galera-9-300ms-high-results.json"


def test_format_12_rows_and_columns(data_dir):
    df = ingest_file(data_dir / V12)
    # 4 auth iterations x (Total + 2 actions) + 3 tenant iterations x (Total + 2 + 2 nested)
    assert len(df) == 4 * 3 + 3 * 5
    assert set(df["scenario"].astype(str)) == {
        "KeystoneBasic.authenticate_user_and_validate_token", "KeystoneBasic.create_and_list_tenants"}
    # the empty workload (index 1) contributes no row, indexes follow the file
    assert sorted(df["workload"].unique()) == [0, 2]
    assert sorted(df["subtask"].unique()) == [0, 1]
    tot = df[df["action"] == "Total"]
    assert len(tot) == 7
    assert (tot["action_duration"] == tot["iteration_duration"]).all()
    nested = df[df["action_depth"] == 1]
    assert set(nested["action"].astype(str)) == {
        "keystone_v3.create_project/keystone_v3.list_roles", "keystone_v3.create_project/keystone_v3.add_role"}
    assert set(nested["action_name"].astype(str)) == {"keystone_v3.list_roles", "keystone_v3.add_role"}
    # params from the file name, recorded as such
    assert set(df["params_source"].astype(str)) == {"filename"}
    assert df["param.backend"].iloc[0] == "mariadb"
    assert df["param.regions"].iloc[0] == 3
    assert df["param.latency_ms"].iloc[0] == 100
    assert df["param.load"].iloc[0] == "light"


def test_failed_iteration(data_dir):
    df = ingest_file(data_dir / V12)
    it2 = df[(df["workload"] == 0) & (df["iteration"] == 2)]
    assert set(it2["error_type"].astype(str)) == {"Unauthorized"}
    assert it2["error_message"].iloc[0].startswith("The request you have made requires authentication")
    failed = it2[it2["action_failed"]]["action"].astype(str).tolist()
    assert sorted(failed) == ["Total", "keystone_v3.validate_token"]
    ok = df[(df["workload"] == 0) & (df["iteration"] == 0)]
    assert ok["error_type"].isna().all() and not ok["action_failed"].any()


def test_durations_match_raw_json(data_dir):
    raw = json.loads((data_dir / V12).read_text())
    df = ingest_file(data_dir / V12)
    data = raw["tasks"][0]["subtasks"][0]["workloads"][0]["data"]
    got = df[(df["workload"] == 0) & (df["action"] == "keystone_v3.fetch_token")].sort_values("iteration")
    want = [it["atomic_actions"][0]["finished_at"] - it["atomic_actions"][0]["started_at"] for it in data]
    assert got["action_duration"].tolist() == pytest.approx(want)
    assert got["iteration_timestamp"].tolist() == [it["timestamp"] for it in data]


def test_old_results_list_format(data_dir):
    df = ingest_file(data_dir / OLD)
    assert len(df) == 3 + 3 + 2
    assert df["param.backend"].iloc[0] == "galera" and df["param.regions"].iloc[0] == 9
    ft = df[df["action"] == "keystone_v3.fetch_token"].sort_values("iteration")
    assert ft["action_duration"].tolist()[:2] == [0.6, 0.8]
    assert math.isnan(ft["action_duration"].tolist()[2])
    assert ft["action_started"].isna().all()  # the old format has no start times
    assert df[df["iteration"] == 2]["error_type"].astype(str).unique().tolist() == ["ConnectFailure"]


def test_in_memory_and_empty():
    empty = {"info": {"format_version": "1.2"}, "tasks": [{"uuid": "u", "subtasks": [
        {"title": "s", "workloads": [{"scenario": {"X.y": {}}, "data": []}]}]}]}
    df = ingest_rally_json(empty, params={"backend": "mariadb"})
    assert len(df) == 0
    assert "action_duration" in df.columns


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("truncated.json", ["truncated.json", "invalid JSON at line", "truncated?"]),
        ("missing-started.json", ["missing-started.json",
                                  "$.tasks[0].subtasks[1].workloads[1].data[2].atomic_actions[0].children[1]",
                                  "started_at"]),
        ("duration-string.json", ["duration-string.json", "$.tasks[0].subtasks[0].workloads[0].data[1].duration"]),
    ],
)
def test_malformed_names_file_and_path(data_dir, name, needles):
    with pytest.raises(IngestError) as ei:
        ingest_file(data_dir / "malformed" / name)
    msg = str(ei.value)
    for n in needles:
        assert n in msg, msg


def test_not_a_report(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(IngestError, match=r"x\.json.*\$"):
        ingest_file(p)


def test_sidecar_params(data_dir):
    df = ingest_paths([data_dir / "sidecar"])
    assert set(df["params_source"].astype(str)) == {"sidecar"}
    assert df["param.backend"].iloc[0] == "cockroachdb"
    assert df["param.regions"].iloc[0] == 45


def test_params_from_filename():
    assert params_from_filename("cockroachdb-45-0ms-high-2018-03-01.json") == {
        "backend": "cockroachdb", "regions": 45, "latency_ms": 0, "load": "high"}
    assert params_from_filename("run_backend=galera_placement=2-1-0.json")["backend"] == "galera"
    assert params_from_filename("something.json") == {}


def test_bundle_params_from_manifest(tmp_path, data_dir, bundle_factory):
    d = bundle_factory(tmp_path, data_dir / V12, params={"backend": "galera", "regions": 9, "rtt_ms": 100.0})
    df = ingest_bundle(d)
    assert len(df) == 27
    assert set(df["params_source"].astype(str)) == {"manifest"}
    assert df["param.backend"].iloc[0] == "galera"
    assert df["param.rtt_ms"].iloc[0] == 100.0
    assert df["trial_id"].iloc[0] == "t0" and df["region"].iloc[0] == "r1"
    assert df["attempt"].iloc[0] == 1


def test_discover_mixed_and_parquet_roundtrip(tmp_path, data_dir, bundle_factory):
    bundle_factory(tmp_path / "b", data_dir / V12, params={"backend": "galera"})
    bundle_factory(tmp_path / "b", None, trial="t1", params={"backend": "galera"})  # failed run, no rally.json
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / OLD).write_text((data_dir / OLD).read_text())
    srcs = discover([tmp_path])
    assert sorted(s.kind for s in srcs) == ["bundle", "bundle", "file"]
    df = ingest_paths([tmp_path])
    assert len(df) == 27 + 8
    assert set(df["params_source"].astype(str)) == {"manifest", "filename"}
    p = write_parquet(df, tmp_path / "results.parquet")
    back = read_parquet(p)
    assert len(back) == len(df)
    assert "backend" in back.attrs["parameters"]
    pd.testing.assert_series_equal(back["action_duration"], df["action_duration"])
    # a stored results.parquet is not taken for input
    assert len(discover([tmp_path])) == 3


def test_a_live_lab_run_reads_as_its_complete_bundles(tmp_path, data_dir, bundle_factory):
    """`wanwide report OUT/bundles` while the lab still runs: Rally's half-written files in the hidden
    scratch dir (bundles/.work) are not results; the complete bundles are."""
    bundle_factory(tmp_path / "bundles" / "b", data_dir / V12, params={"backend": "galera"})
    work = tmp_path / "bundles" / ".work" / "20261127t000000z-aaaaaaaaaaaa"
    work.mkdir(parents=True)
    (work / "rally.json").write_text('[{"partial": ')  # being written
    srcs = discover([tmp_path / "bundles"])
    assert [s.kind for s in srcs] == ["bundle"]
    assert len(ingest_paths([tmp_path / "bundles"])) == 27
