"""The network through the load (pipeline/runner/netwatch.py) and the probe's lost probes, on real loopback
sockets: a listener answers, a closed port answers (RST), a listener whose accept queue is full drops the SYN
(no answer: lost). The shapers' counters' difference (pure)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from wanwide.core.contracts import MemberTarget, RttTarget
from wanwide.pipeline.runner import netwatch, probe


def test_a_lost_probe_is_none_in_its_place(ports):
    up, closed, full = ports
    assert all(x is not None and x < 50 for x in probe.answers_ms("127.0.0.1", up, 3, 0.01, 0.5))
    assert all(x is not None for x in probe.answers_ms("127.0.0.1", closed, 3, 0.01, 0.5))
    lost = probe.answers_ms("127.0.0.1", full, 2, 0.01, 0.3)
    assert lost == [None, None]
    assert probe.samples_ms("127.0.0.1", full, 2, 0.01, 0.3) == []


def test_the_watch_probes_each_target_through_the_load_and_counts_what_it_lost(ports):
    up, closed, full = ports
    targets = netwatch.targets_of(
        [RttTarget(region="r2", kind="keystone", host="127.0.0.1", port=up),
         RttTarget(region="r2", kind="database", host="127.0.0.1", port=closed)],
        [MemberTarget(region="r2", host="127.0.0.1", port=closed),  # the database endpoint itself: once
         MemberTarget(region="r3", host="127.0.0.1", port=full)])
    assert [(t["region"], t["kind"]) for t in targets] == [("r2", "keystone"), ("r2", "database"), ("r3", "member")]
    t0 = time.time()
    with netwatch.Watch("r1", targets, 0.3, t0, timeout=0.2) as w:
        time.sleep(1.0)
    doc = w.document()
    ks, db, member = doc["targets"]
    assert ks["sent"] >= 3 and ks["lost"] == 0 and ks["median_ms"] < 50 and db["lost"] == 0
    assert member["sent"] >= 3 and member["lost"] == member["sent"] and member["loss_pct"] == 100.0
    assert member["median_ms"] is None and member["samples"][0][1] is None
    assert all(0 <= s[0] < 2.0 for s in ks["samples"])  # offsets from the load start
    assert doc["verdict"].startswith("informational")


def test_the_shapers_counters_over_the_load_are_what_grew():
    before = {"r1→r2": {"kind": "linkemu", "frames": 100, "lost": 1, "overflow": 0},
              "r2→r1": {"kind": "netem", "packets": 50, "drops": 0, "backlog": 7},
              "r1→r3": {"kind": "wirefilter", "error": "wirefilter keeps no counters wanwide reads"}}
    after = {"r1→r2": {"kind": "linkemu", "frames": 1100, "lost": 12, "overflow": 3},
             "r2→r1": {"kind": "netem", "packets": 950, "drops": 9, "backlog": 2},
             "r1→r3": {"kind": "wirefilter", "error": "wirefilter keeps no counters wanwide reads"},
             "r3→r1": {"kind": "linkemu", "frames": 5}}
    assert netwatch.counters_delta(before, after) == {
        "r1→r2": {"frames": 1000, "lost": 11, "overflow": 3},
        "r2→r1": {"packets": 900, "drops": 9}}  # backlog is a gauge, not a counter; r3→r1 has no earlier reading


def test_the_probe_measures_at_the_real_time_priority_it_is_given(ports):
    """``python -m wanwide.pipeline.runner.probe … RT``: the probe raises itself to SCHED_FIFO RT once started (a
    ``chrt`` prefix would make its start compete with the probes already measuring); without RT it stays as it
    was. Read from the running probe's /proc (root only: unprivileged, the raise is refused and ignored)."""
    import os
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs root")
    up = ports[0]
    policy = {}
    for rt in ("20", "0"):
        p = subprocess.Popen([sys.executable, "-m", "wanwide.pipeline.runner.probe", "127.0.0.1", str(up), "40", "0.05",
                              "0.5", rt], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # started, measuring (40 probes 50 ms apart: 2 s)
        stat = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        policy[rt] = (int(stat[38]), int(stat[37]))  # (policy, rt_priority): fields 41 and 40 of proc(5)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0 and len(json.loads(out)) == 40
    assert policy == {"20": (os.SCHED_FIFO, 20), "0": (os.SCHED_OTHER, 0)}, policy
