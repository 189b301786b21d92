"""Pairs of regions probed between themselves during the load (issue 46 item 5), on real namespaces and shaped
links: the runner's watch enters a region's namespace from a thread of its own and measures that region's link to
another — the shaped round trip, and a cut made on that pair while it watches — which the same probe from outside
the namespace does not cross; a namespace it cannot enter probes nothing rather than from the wrong place."""

from __future__ import annotations

import time

import pytest

from wanwide.core.plan.links import OneWay
from wanwide.pipeline.runner import netwatch
from wanwide.providers.lab import linkemu, netns, shaping

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("need_net")]
RTT_MS = 40.0
REGIONS = ["r1", "r2", "r3"]


@pytest.fixture(scope="module")
def net(leftovers):
    shaper = next((s for s, ok in (("netem", shaping.netem_available), ("linkemu", linkemu.available)) if ok()), None)
    if shaper is None:
        pytest.skip("no shaper on this machine")
    half = OneWay(delay_ms=RTT_MS / 2)
    n = netns.build(REGIONS, {(a, b): half for a in REGIONS for b in REGIONS if a != b}, shaper=shaper)
    yield n
    tag = n.tag
    n.destroy()
    assert leftovers(tag) == []


def _target(n: netns.Network, region: str) -> list[dict]:
    # port 9: closed, an RST answers in one round trip (the lab's network check probes the same way)
    return [{"region": region, "kind": "keystone", "host": n.address(region), "port": 9}]


@pytest.mark.timeout(120)
def test_a_pair_away_from_the_load_region_is_probed_from_inside_its_source(net: netns.Network) -> None:
    t0 = time.time()
    inside = netwatch.Watch("r2", _target(net, "r3"), 0.25, t0, timeout=1.0, netns=net.netns_path("r2"))
    outside = netwatch.Watch("r2", _target(net, "r3"), 0.25, t0, timeout=0.5)  # from the runner's own namespace
    with inside, outside:
        time.sleep(2.0)
        net.set_link("r2", "r3", OneWay(delay_ms=RTT_MS / 2, loss_pct=100))  # the pair cut while watched
        cut = time.time() - t0
        time.sleep(2.5)
    net.set_link("r2", "r3", OneWay(delay_ms=RTT_MS / 2))  # the cut undone (restore() only undoes a lift())
    (row,) = inside.rows()
    before = [ms for at, ms in row["samples"] if at < cut - 0.5]  # answered before the cut (probes take 40 ms)
    after = [ms for at, ms in row["samples"] if at > cut + 1.0]  # past the probes in flight at the cut
    assert len(before) >= 4 and all(ms is not None for ms in before), row["samples"]
    assert all(RTT_MS * 0.95 <= ms < RTT_MS + 200 for ms in before), before  # the shaped link, not loopback
    assert len(after) >= 1 and all(ms is None for ms in after), row["samples"]
    assert row["src"] == "r2" and row["dst"] == "r3" and "error" not in row
    # the same probe from outside the namespaces never crosses r2's link (no route: lost; the lab's host link:
    # unshaped) and never sees its cut: the answers above came through it
    (out,) = outside.rows()
    assert out["sent"] >= 3 and not any(ms is not None and ms >= RTT_MS * 0.95 for _, ms in out["samples"])
    assert not (out["lost"] and out["lost"] < out["sent"]), out["samples"]


def test_a_namespace_it_cannot_enter_probes_nothing() -> None:
    w = netwatch.Watch("r9", [{"region": "r1", "kind": "keystone", "host": "127.0.0.1", "port": 9}], 0.1,
                       time.time(), netns="/run/netns/ww-no-such-namespace")
    with w:
        time.sleep(0.5)
    (row,) = w.rows()
    assert row["sent"] == 0 and "cannot enter /run/netns/ww-no-such-namespace" in row["error"]


@pytest.mark.timeout(180)
def test_watch_jobs_as_on_kubernetes_measure_their_links_and_the_runner_collects_them(net: netns.Network, tmp_path,
                                                                                       monkeypatch) -> None:
    """Kubernetes' way (no namespace the runner can enter): ``wanwide runner watch``, the real command, started
    inside r1 and inside r2 as a watch Job's pod is inside its region, each storing into a real S3 (versitygw on the
    lab's host address) across its region's host link; r1's ends by SIGTERM (its document stored first), r2's by
    the mark the load's runner stores, which then collects both: the shaped 40 ms, from each source."""
    import json
    import shutil
    import signal
    import subprocess
    import sys
    import tempfile
    from datetime import UTC, datetime
    from pathlib import Path

    from tests.ports import free_port
    from wanwide.core import timestamps as ts
    from wanwide.core.contracts import PairWatches, S3Target, WatchConfig
    from wanwide.pipeline.runner import pairwatch
    from wanwide.providers.lab import paths, services
    from wanwide.providers.lab.netns import HOST_ADDRESS

    if not paths.versitygw().exists():
        pytest.skip("versitygw not built (hack/install-lab.sh)")
    boto3 = pytest.importorskip("boto3")
    run_dir = Path(tempfile.mkdtemp(prefix="ww-run-watch-", dir="/tmp"))  # traversable: the lab's services' rule
    run_dir.chmod(0o755)
    svc = services.Services(None, run_dir)
    try:
        s3 = svc.start_s3(host=HOST_ADDRESS, port=free_port())
        boto3.client("s3", endpoint_url=s3.info["url"], aws_access_key_id=s3.info["access_key"],
                     aws_secret_access_key=s3.info["secret_key"], region_name="us-east-1",
                     config=boto3.session.Config(s3={"addressing_style": "path"})).create_bucket(Bucket="results")
        target = S3Target(endpoint=s3.info["url"], bucket="results", prefix="lab")
        env = {"PATH": "/usr/bin:/bin", "AWS_ACCESS_KEY_ID": s3.info["access_key"],
               "AWS_SECRET_ACCESS_KEY": s3.info["secret_key"], "PYTHONPATH": ":".join(sys.path)}
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # the load's runner's, as its Job's env gives them
            monkeypatch.setenv(k, env[k])
        start = ts.iso(datetime.now(UTC), precise=True)
        procs = {}
        for src, dsts in (("r1", ["r2"]), ("r2", ["r3"])):
            cfg = WatchConfig(benchmark="b", trial="t000", region=src, start_at=start, period_s=0.5, flush_s=1,
                              max_s=120, results=target, coverage={"pairs": 2, "of": 3, "how": "test"},
                              targets=[{**_target(net, d)[0], "requested_rtt_ms": RTT_MS} for d in dsts])
            path = tmp_path / f"watch-{src}.json"
            path.write_text(cfg.model_dump_json())
            procs[src] = net.popen_in(src, [sys.executable, "-m", "wanwide.cli", "runner", "watch", "--config",
                                            str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True)
        client = boto3.client("s3", endpoint_url=s3.info["url"], aws_access_key_id=s3.info["access_key"],
                              aws_secret_access_key=s3.info["secret_key"], region_name="us-east-1")
        end = time.time() + 90  # both watches running (a partial document stored), then 3 s more of probes
        while not all(client.list_objects_v2(Bucket="results", Prefix=f"lab/b/t000/_network/during-1/{src}.json")
                      .get("KeyCount") for src in procs):
            assert time.time() < end and all(p.poll() is None for p in procs.values()), "a watch did not start"
            time.sleep(0.5)
        time.sleep(3)
        procs["r1"].send_signal(signal.SIGTERM)
        assert procs["r1"].wait(60) == 0, procs["r1"].stdout.read()
        got = pairwatch.collect(target, "b", "t000", 1, PairWatches(sources=["r1", "r2"], coverage={"pairs": 2},
                                                                    wait_s=60), poll_s=0.5, say=print)
        assert procs["r2"].wait(60) == 0, procs["r2"].stdout.read()
        said = procs["r2"].stdout.read()
        assert "(the load is done)" in said, said
        rows = {(p["src"], p["dst"]): p for p in got["pairs"]}
        assert list(rows) == [("r1", "r2"), ("r2", "r3")] and got["coverage"]["stored"] == 2, got
        for row in rows.values():
            answered = [ms for _, ms in row["samples"] if ms is not None]
            assert row["sent"] >= 5 and row["lost"] == 0, row
            assert all(RTT_MS * 0.95 <= ms < RTT_MS + 200 for ms in answered), row  # the shaped link
        doc = json.loads(client.get_object(Bucket="results", Key="lab/b/t000/_network/during-1/r1.json")["Body"].read())
        assert doc["final"] is True and doc["ended"] == "terminated"
    finally:
        for p in locals().get("procs", {}).values():
            if p.poll() is None:
                p.kill()
        svc.stop_all()
        shutil.rmtree(run_dir, ignore_errors=True)
