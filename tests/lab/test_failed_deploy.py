"""A deployment that fails half-way leaves nothing running: seen at 45 regions, where Galera member r36 did
not reach a primary view in time and the 35 members already started (and the 45 namespaces) stayed up while
the next trial deployed anew beside them, starving its joins too. Its failing stage is tried three times
(the lifecycle's deployment stages, core/lifecycle/deploy.py), then the trial cleans up before the next."""

from __future__ import annotations

import io
import os
import statistics
from pathlib import Path

import pytest
import yaml

from wanwide.core import lifecycle as lc
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.lab import bringup
from wanwide.providers.lab import run as lab_run
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.quiet import QuietGate

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("need_services")]


def _trials() -> list:
    docs = [
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "ci-halfway"},
         "spec": {"generate": {"count": 2}}},
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "ci-halfway"},
         "spec": {"topologyRef": "ci-halfway", "database": {"backend": "galera", "galera": {"allowFewerThanThree": True}},
                  "workload": {"load": "light", "scenarios": [{"name": "authenticate_user_and_validate_token",
                                                                "times": 2}]},
                  "matrix": {"rtt": ["0ms", "10ms"], "order": "Sequential"}}},
    ]
    d = load_documents([yaml.safe_dump_all(docs)])
    (bench,) = d.benchmarks
    return plan(bench, d.topology_for(bench))


@pytest.mark.timeout(600)
def test_a_deployment_that_fails_half_way_is_gone_before_the_next_trial_deploys(tmp_path: Path, monkeypatch,
                                                                                  leftovers) -> None:
    built: list[str] = []  # each deployment's network tag
    seen_at_second: list[list[str]] = []
    place = bringup.place

    def _place(p, dep, shared, **kw):
        if built and dep is None:  # the second trial: what the first one's failed deployment left
            seen_at_second.append(leftovers(built[-1]))
        d = place(p, dep, shared, **kw)
        if d.net.tag not in built:
            built.append(d.net.tag)
        return d

    rtt_at_deploy: list[tuple[float, float]] = []  # (asked, measured) while the services start

    def _keystone(dep, p, stage, say):  # the database is up (two real Galera members): then it fails
        assert len(dep.db) == 2 and all(s.running() for s in dep.db.values())
        asked = p.links[("r1", "r2")].delay_ms + p.links[("r2", "r1")].delay_ms if p.links else 0.0
        rtt_at_deploy.append((asked, statistics.median(dep.net.measure_rtt("r1", "r2", samples=5))))
        raise LabError("keystone r2 did not come up (made to fail by the test)")

    monkeypatch.setattr(bringup, "place", _place)
    monkeypatch.setitem(bringup.SERVICES, "keystone", _keystone)
    work = Path("/var/tmp") / f"wanwide-test-halfway-{os.getpid()}"  # traversable by the services' users
    monkeypatch.setenv("WANWIDE_LAB_WORK", str(work))
    monkeypatch.setattr("sys.stdout", io.StringIO())
    rc = lab_run.run(_trials(), str(tmp_path / "out"), shaper="wirefilter", report=False,
                     gate=QuietGate(enabled=False))
    assert rc != 0
    assert len(built) == 2, "the second trial deploys anew (the first one's deployment never came up)"
    assert seen_at_second == [[]], f"the failed deployment was still there: {seen_at_second}"
    assert leftovers(built[1]) == []
    assert not list(work.glob("*/*-galera")), "its data directories stay behind"
    # the services started on an unconstrained WAN (the second trial asked for 10 ms RTT)
    tries = lc.STAGE_TRIES  # the keystone stage of each trial, tried again until it failed three times
    assert [a for a, _ in rtt_at_deploy] == [0.0] * tries + [10.0] * tries, rtt_at_deploy
    assert all(m < 5 for _, m in rtt_at_deploy), rtt_at_deploy
    # what they said is kept in the run's output (the deployment's directory is gone)
    kept = tmp_path / "out" / "logs" / "ci-halfway" / "t000" / "deploy-failed"
    assert "Synced" in (kept / "r1-galera" / "error.log").read_text()
    assert (kept / "r2-galera" / "error.log").is_file()


def test_a_deployment_refused_before_its_services_leaves_no_namespace(tmp_path):
    """A work directory the services' users cannot enter fails the deployment after its namespaces exist: they are
    removed (bench/nova_scale.py's first try left three sets, one per attempt)."""
    import subprocess

    from tests.plan.specs import small_plan
    from wanwide.providers.lab import bringup
    from wanwide.providers.lab.procs import LabError

    p = small_plan("closed", 2)
    work = tmp_path / "closed"
    work.mkdir(mode=0o700)
    before = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    with pytest.raises(LabError, match="not traversable"):
        bringup.place(p, None, False, shaper="auto", layout="auto", work=work, say=lambda *a, **k: None)
    after = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    assert not {n for n in after - before if n.startswith("ww-")}, after - before
