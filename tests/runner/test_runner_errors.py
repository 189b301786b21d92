"""Runner failures that need no Rally: clear messages, bundle kept locally."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta

import pytest

from wanwide.core.contracts import RunnerConfig, load_config
from wanwide.pipeline.runner.cli import main as runner_main

TASK = {"version": 2, "title": "t", "subtasks": [{
    "title": "auth", "scenario": {"KeystoneBasic.authenticate_user_and_validate_token": {}},
    "runner": {"constant": {"times": 4, "concurrency": 2}}}]}


def _cfg(tmp_path, **over):
    cfg = {
        "benchmark": "b1", "namespace": "lab",
        "trial": {"id": "t-0", "index": 0, "repetition": 0, "parameters": {"backend": "mariadb", "regions": 1}},
        "region": "r1", "role": "load", "attempt": 1,
        "keystone": {"url": "http://127.0.0.1:1/v3", "region_name": "r1", "username": "admin",
                     "password_env": "WW_TEST_KS_PASSWORD", "project_name": "admin",
                     "user_domain_name": "Default", "project_domain_name": "Default",
                     "cache": {"enabled": True}},
        "task": TASK,
        "start_at": (datetime.now(UTC) - timedelta(hours=1)).isoformat(),
        "max_start_skew_s": 10,
        "gauges": {"database": None, "rtt_targets": [], "samples": 0},
        "network_requested": [],
        "results": {"local_dir": str(tmp_path / "results"), "s3": None},
        "versions": {"chart": "x"},
    }
    cfg.update(over)
    p = tmp_path / "runner.json"
    p.write_text(json.dumps(cfg))
    return p


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _bundles(tmp_path):
    return sorted((tmp_path / "results").glob("b1/t-0/r1/attempt-1-*"))


def test_config_model_roundtrip(tmp_path):
    cfg = load_config(_cfg(tmp_path))
    assert isinstance(cfg, RunnerConfig)
    assert cfg.scenarios() == ["KeystoneBasic.authenticate_user_and_validate_token"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(_cfg(tmp_path).read_text()), "task": {"version": 1}}))
    with pytest.raises(ValueError, match=r"(?s)bad.json.*format v2"):
        load_config(bad)


def test_start_time_in_past(tmp_path, capsys):
    rc = runner_main(["run", "--config", str(_cfg(tmp_path))])
    err = capsys.readouterr().err
    assert rc == 1
    assert "in the past" in err and "max_start_skew_s=10" in err
    [b] = _bundles(tmp_path)
    m = json.loads((b / "manifest.json").read_text())
    assert m["schema"] == "wanwide.io/bundle/v1"
    assert m["status"]["result"] == "failed" and m["status"]["reason"] == "StartTooLate"
    assert m["trial"]["parameters"] == {"backend": "mariadb", "regions": 1}
    assert m["keystone"]["cache"] == {"enabled": True}
    assert "task.json" in m["files"] and "manifest.json" in m["files"]
    assert m["start"]["scheduled"].endswith("Z")
    # how late it was: what the operator's retry must allow more (start_at was an hour ago)
    assert 3590 < m["start"]["late_s"] < 3700 and m["start"]["actual"] is None


def test_missing_s3_credentials(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WW_TEST_AK", raising=False)
    monkeypatch.delenv("WW_TEST_SK", raising=False)
    s3 = {"endpoint": "http://127.0.0.1:9", "bucket": "bk", "prefix": "p", "region": "us-east-1",
          "access_key_env": "WW_TEST_AK", "secret_key_env": "WW_TEST_SK"}
    p = _cfg(tmp_path, results={"local_dir": str(tmp_path / "results"), "s3": s3})
    rc = runner_main(["run", "--config", str(p)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "WW_TEST_AK" in err and "WW_TEST_SK" in err and "credentials missing" in err


def test_unreachable_s3_keeps_bundle(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WW_TEST_AK", "a")
    monkeypatch.setenv("WW_TEST_SK", "b")
    monkeypatch.setenv("WANWIDE_UPLOAD_ATTEMPTS", "2")
    monkeypatch.setenv("WANWIDE_UPLOAD_BACKOFF_S", "0.1")
    port = _closed_port()
    s3 = {"endpoint": f"http://127.0.0.1:{port}", "bucket": "bk", "prefix": "p", "region": "us-east-1",
          "access_key_env": "WW_TEST_AK", "secret_key_env": "WW_TEST_SK"}
    p = _cfg(tmp_path, results={"local_dir": str(tmp_path / "results"), "s3": s3})
    rc = runner_main(["run", "--config", str(p)])
    err = capsys.readouterr().err
    assert rc == 3
    assert f"http://127.0.0.1:{port}" in err and "bucket bk" in err and "kept locally" in err
    [b] = _bundles(tmp_path)
    assert str(b) in err
    assert (b / "manifest.json").is_file()


def test_upload_keeps_trying_until_its_deadline_then_says_where_the_bundle_is(tmp_path, capsys, monkeypatch):
    """``wanwide runner upload`` of a kept bundle: with a deadline, retried (with back-off) until it passes."""
    import time

    monkeypatch.setenv("WW_TEST_AK", "a")
    monkeypatch.setenv("WW_TEST_SK", "b")
    monkeypatch.setenv("WANWIDE_UPLOAD_BACKOFF_S", "0.2")
    runner_main(["run", "--config", str(_cfg(tmp_path))])  # StartTooLate: a bundle, no S3 configured
    [b] = _bundles(tmp_path)
    capsys.readouterr()
    port = _closed_port()
    s3 = {"endpoint": f"http://127.0.0.1:{port}", "bucket": "bk", "prefix": "p", "region": "us-east-1",
          "access_key_env": "WW_TEST_AK", "secret_key_env": "WW_TEST_SK", "upload_deadline_s": 2}
    p = _cfg(tmp_path, results={"local_dir": str(tmp_path / "results"), "s3": s3})
    t0 = time.monotonic()
    rc = runner_main(["upload", "--config", str(p), str(b)])
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert rc == 3 and 1.0 < took < 6, (rc, took)
    assert err.count("retrying in") >= 3 and "s left failed" in err  # several tries, the time left said
    assert f"http://127.0.0.1:{port}" in err and str(b) in err and "kept locally" in err
    rc = runner_main(["upload", "--config", str(_cfg(tmp_path)), str(b)])  # no results.s3
    assert rc == 2 and "names no results.s3" in capsys.readouterr().err


def test_runner_parser_mounts():
    import argparse

    from wanwide.pipeline.results.cli import add_report_parser
    from wanwide.pipeline.runner.cli import add_runner_parser

    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    add_runner_parser(sub)
    add_report_parser(sub)
    a = ap.parse_args(["runner", "run", "--config", "x.json"])
    assert a.func.__name__ == "cmd_run"
    a = ap.parse_args(["report", "d1", "s3://b/p", "-o", "out"])
    assert a.sources == ["d1", "s3://b/p"] and a.output == "out"


@pytest.mark.lab
def test_keystone_unreachable_names_url_and_fix(tmp_path, capsys, monkeypatch):
    """Preparing Rally's user fails clearly (before any task) when Keystone cannot be reached."""
    from wanwide.pipeline.runner.rally import RallyError, find_rally

    try:
        find_rally()
    except RallyError:
        pytest.skip("Rally not installed (hack/install-lab.sh)")
    monkeypatch.setenv("WW_TEST_KS_PASSWORD", "x")
    port = _closed_port()
    ks = {"url": f"http://127.0.0.1:{port}/v3", "region_name": "r1", "password_env": "WW_TEST_KS_PASSWORD"}
    p = _cfg(tmp_path, keystone=ks, start_at=None)
    rc = runner_main(["run", "--config", str(p)])
    assert rc == 1
    [b] = _bundles(tmp_path)
    st = json.loads((b / "manifest.json").read_text())["status"]
    assert st["reason"] == "RallySetupFailed"
    assert f"127.0.0.1:{port}" in st["message"] and "spec.runner.rallyUsers: PerSubtask" in st["message"]
