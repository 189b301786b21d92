"""Per-region CPU limits (providers/lab/cgroups.py) on this machine's real cgroups: a region limited to a fifth of
a core gets a fifth of a core and is throttled, an unlimited one is only counted; a region's processes are found
by its network namespace; everything is removed afterwards. Needs root and a cpu controller (skipped otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wanwide.providers.lab import cgroups as cg


def _usable() -> str:
    if os.geteuid() != 0:
        return "not root"
    try:
        cg.detect()
    except cg.CgroupError as e:
        return str(e)
    return ""


needs_cgroups = pytest.mark.skipif(bool(_usable()), reason=_usable() or "ok")

BURN = "import time\nt = time.time()\nwhile time.time() - t < 3: pass\n"


def test_a_quota_is_cores_times_the_period_and_zero_cores_is_refused():
    assert cg.quota(0.5) == 50_000 and cg.quota(2.0) == 200_000 and cg.quota(0.001) == 1000
    with pytest.raises(cg.CgroupError, match="above 0"):
        cg.quota(0)
    with pytest.raises(cg.CgroupError, match="cgroup name"):
        cg.RegionCgroups("x", ["r 1"], 0.5, cg.Hierarchy(1, Path("/nonexistent")))


def test_cpu_stat_lines_are_read_as_numbers():
    assert cg.parse_stat("nr_periods 10\nnr_throttled 4\nthrottled_time 123\nbad line x\n") == \
        {"nr_periods": 10, "nr_throttled": 4, "throttled_time": 123}


@pytest.mark.lab
@needs_cgroups
def test_a_limited_region_gets_its_share_of_a_core_and_an_unlimited_one_is_counted():
    """Two CPU-bound processes for 3 s, one placed in a region limited to 0.2 cores, the other in one counted but
    not limited: the first uses about 0.6 CPU-s and is throttled, the second more (what the busy machine leaves
    it); removed afterwards."""
    limited = cg.RegionCgroups(f"test{os.getpid()}", ["slow"], 0.2).create()
    free = cg.RegionCgroups(f"test{os.getpid()}b", ["fast"], None).create()
    procs = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        assert limited.place({"slow": [procs[0].pid]}) == 1 and free.place({"fast": [procs[1].pid]}) == 1
        for p in procs:
            p.wait(timeout=30)
        slow, fast = limited.usage()["slow"], free.usage()["fast"]
        assert slow["cpu_s"] is not None and 0.3 <= slow["cpu_s"] <= 0.8, slow
        assert slow["nr_throttled"] > 0 and slow["throttled_s"] > 0.3, slow
        assert fast["cpu_s"] > slow["cpu_s"] and fast["nr_throttled"] == 0, fast
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        limited.close()
        free.close()
    assert not any(d.exists() for d in [*limited.dirs("slow"), *free.dirs("fast")])


@pytest.mark.lab
@needs_cgroups
def test_a_regions_processes_are_found_by_its_network_namespace_and_placed():
    ns = f"wwcg{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    groups = cg.RegionCgroups(f"test{os.getpid()}ns", ["r1"], 0.5).create()
    p = None
    try:
        p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", "import time; time.sleep(5)"])
        deadline = time.time() + 5
        while time.time() < deadline and not cg.region_pids({"r1": ns}).get("r1"):
            time.sleep(0.05)
        assert p.pid in cg.region_pids({"r1": ns})["r1"]
        assert cg.place_trial(groups, {"r1": ns}) >= 1
        assert str(p.pid) in (groups.dirs("r1")[0] / "cgroup.procs").read_text().split()
        assert cg.place_trial(None, {"r1": ns}) == 0  # no limits asked: nothing moved
    finally:
        if p is not None:
            p.kill()
            p.wait()
        groups.close()
        subprocess.run(["ip", "netns", "del", ns], check=False)
