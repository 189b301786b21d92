"""The runner pod's own netem qdiscs as its bundle's shaper counters on Kubernetes (``pipeline/runner/qdisc.py``,
``wanwide runner qdisc REGION``): Chaos Mesh's chaos-daemon shapes a pod's traffic with netem qdiscs behind a prio
root (one per object selecting the pod, each with a filter for its destinations). Real netem is read in the VM
tier (tests/vm/test_qdisc_in_vm.py); this kernel has none."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wanwide.pipeline.runner import netwatch
from wanwide.pipeline.runner.qdisc import MAX_QDISCS, NONE, own_counters, read

ROOT = Path(__file__).resolve().parents[2]

# the form of `tc -s -j qdisc show` in a pod Chaos Mesh shaped toward two destination sets (iproute2 6.x)
SHAPED = [
    {"kind": "prio", "handle": "1:", "dev": "eth0", "root": True, "refcnt": 2, "options": {"bands": 4},
     "bytes": 9000, "packets": 100, "drops": 0, "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0},
    {"kind": "netem", "handle": "2:", "dev": "eth0", "parent": "1:4",
     "options": {"limit": 1000, "delay": {"delay": 0.05, "jitter": 0, "correlation": 0}},
     "bytes": 4000, "packets": 40, "drops": 0, "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0},
    {"kind": "netem", "handle": "3:", "dev": "eth0", "parent": "1:5",
     "options": {"limit": 1000, "loss-random": {"loss": 0.1, "correlation": 0}},
     "bytes": 5000, "packets": 50, "drops": 5, "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0},
    {"kind": "noqueue", "handle": "0:", "dev": "lo", "root": True, "refcnt": 2, "options": {}},
]


def test_each_netem_qdisc_of_the_pod_with_its_counters_and_what_it_does():
    got = own_counters("r1", SHAPED)
    assert set(got) == {"r1→* (eth0 2:)", "r1→* (eth0 3:)"}  # the prio root and lo's noqueue are not shapers
    assert got["r1→* (eth0 3:)"] == {"kind": "netem", "parent": "1:5", "packets": 50, "bytes": 5000, "drops": 5,
                                     "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0,
                                     "options": {"limit": 1000, "loss-random": {"loss": 0.1, "correlation": 0}}}
    assert got["r1→* (eth0 2:)"]["options"]["delay"]["delay"] == 0.05


def test_the_runner_records_what_they_grew_by_over_the_load():
    later = json.loads(json.dumps(SHAPED))
    later[2] |= {"packets": 950, "drops": 95}
    delta = netwatch.counters_delta(own_counters("r1", SHAPED), own_counters("r1", later))
    assert delta == {"r1→* (eth0 2:)": {"packets": 0, "bytes": 0, "drops": 0, "overlimits": 0, "requeues": 0},
                     "r1→* (eth0 3:)": {"packets": 900, "bytes": 0, "drops": 90, "overlimits": 0, "requeues": 0}}


@pytest.mark.parametrize("qdiscs", [[], [{"kind": "noqueue", "dev": "eth0"}], "not a list", [None, 3]])
def test_a_pod_nothing_shaped_says_so(qdiscs):
    assert own_counters("r2", qdiscs) == {"r2→*": {"kind": "none", "error": NONE}}


def test_bounded_however_many_objects_select_the_pod():
    many = [{"kind": "netem", "dev": "eth0", "handle": f"{i}:", "packets": i} for i in range(2, 500)]
    got = own_counters("r1", many)
    assert len(got) == MAX_QDISCS + 1 and "more than 64" in got["r1→* (more)"]["error"]


@pytest.mark.skipif(not shutil.which("tc") or not shutil.which("unshare") or os.geteuid() != 0,
                    reason="needs tc, unshare and root (a network namespace of its own)")
def test_real_tc_in_a_fresh_network_namespace_reads_no_netem():
    """The real ``tc``, through the runner's own command, in a new network namespace (as a pod's, before Chaos Mesh
    shapes it): parsed, and none said."""
    out = subprocess.run(["unshare", "-n", sys.executable, "-m", "wanwide.pipeline.runner.cli", "qdisc",
                          "r3"], capture_output=True, text=True, check=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "operator")}).stdout
    assert json.loads(out) == {"r3→*": {"kind": "none", "error": NONE}}


def test_without_tc_the_reading_says_why(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    got = read("r1")["r1→*"]
    assert got["kind"] == "unknown" and got["error"].startswith("tc: FileNotFoundError")
