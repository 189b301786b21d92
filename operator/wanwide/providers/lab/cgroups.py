"""Per-region CPU limits for the lab: a cgroup per region, so that one region's services cannot take another's CPU.

On one machine every region's processes share its cores: under high load a region whose Keystone hashes
passwords takes CPU from the others, and Galera's members apply every write once each on the same cores
(docs/results-study.md, "The CPU out of the effect"). A cgroup per region with a CPU quota gives each region
at most ``cores`` cores, whatever the others do — a machine per region, smaller than the study's. What it
cannot do is add CPU: N regions at ``cores`` each need N × ``cores`` of the machine's.

A region's processes are the processes in its network namespace (every service, every runner and Rally,
their children): ``place`` moves each into its region's cgroup; a child forked afterwards stays in its
parent's. cgroup v2 (``cpu.max``, ``cpu.stat``'s ``usage_usec``/``throttled_usec``) where the ``cpu``
controller is on the unified hierarchy, else v1 (``cpu.cfs_quota_us``/``cpu.cfs_period_us``; usage from
the ``cpuacct`` hierarchy, throttling from ``cpu.stat``). Needs root, as the lab does.

Where it hooks in: ``providers/lab/run.py`` ``LabRun.release``, right before the quiet-machine gate — every
service and runner of the trial exists by then and nothing has been measured yet:

    cgroups.place_trial(self.cpu_limits, {r: dep.net.node_netns(r) for r in p.region_names})

(``self.cpu_limits``: a ``RegionCgroups`` made in ``LabRun.deploy`` when the plan asks for limits, closed in
``LabRun.close``). Until that hook lands (run.py is being refactored), ``python -m
wanwide.providers.lab.cgroups watch`` does the same from beside a ``wanwide lab run``: it places every
process of the lab's namespaces into its region's cgroup every ``--every`` seconds and, when stopped, prints
each region's CPU and throttling.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from wanwide.pipeline.runner.contention import own_pids

CGROUP = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
NETNS_DIR = Path("/var/run/netns")


class CgroupError(RuntimeError):
    """The machine cannot give regions CPU limits (no cpu controller, not root): one line saying why."""


@dataclass(frozen=True)
class Hierarchy:
    """Where the cpu controller is: ``v2`` (one directory for quota and usage) or ``v1`` (``cpu`` for the quota
    and throttling, ``cpuacct`` for the usage)."""

    version: int
    cpu: Path
    acct: Path | None = None


def detect(root: Path = CGROUP) -> Hierarchy:
    """The hierarchy that has the cpu controller on this machine."""
    for unified in (root, root / "unified"):
        ctl = unified / "cgroup.controllers"
        if ctl.is_file() and "cpu" in ctl.read_text().split():
            return Hierarchy(2, unified)
    if (root / "cpu" / "cpu.cfs_quota_us").is_file():
        acct = root / "cpuacct"
        return Hierarchy(1, root / "cpu", acct if (acct / "cpuacct.usage").is_file() else None)
    raise CgroupError(f"no cpu controller under {root} (neither cgroup v2's cpu nor v1's cpu.cfs_quota_us): "
                      "per-region CPU limits cannot be set on this machine")


def quota(cores: float, period_us: int = PERIOD_US) -> int:
    """The CFS quota (µs per period) that gives ``cores`` cores."""
    if cores <= 0:
        raise CgroupError(f"cores per region must be above 0 (got {cores:g}): set it, or leave the limits off")
    return max(1000, round(cores * period_us))


def _name(region: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", region):
        raise CgroupError(f"region {region!r}: a cgroup name takes letters, digits, '_', '.', '-' only")
    return region


def parse_stat(text: str) -> dict[str, int]:
    """``key value`` lines of a ``cpu.stat``."""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[k] = int(v)
    return out


class RegionCgroups:
    """A cgroup per region under ``wanwide-<name>``, each limited to ``cores`` cores (None: counted, not limited)."""

    def __init__(self, name: str, regions: Iterable[str], cores: float | None, hierarchy: Hierarchy | None = None):
        self.h = hierarchy or detect()
        self.name = f"wanwide-{_name(name)}"
        self.regions = [_name(r) for r in regions]
        self.cores = cores
        self._quota = quota(cores) if cores is not None else None

    def dirs(self, region: str) -> list[Path]:
        """The region's directories: the cpu one first (quota, throttling), then cpuacct's (v1 usage)."""
        out = [self.h.cpu / self.name / region]
        if self.h.version == 1 and self.h.acct is not None:
            out.append(self.h.acct / self.name / region)
        return out

    def create(self) -> RegionCgroups:
        """Make every region's cgroup and set its quota."""
        try:
            if self.h.version == 2:
                (self.h.cpu / self.name).mkdir(exist_ok=True)
                (self.h.cpu / self.name / "cgroup.subtree_control").write_text("+cpu")
            for r in self.regions:
                for d in self.dirs(r):
                    d.mkdir(parents=True, exist_ok=True)
                cpu = self.dirs(r)[0]
                if self.h.version == 2:
                    (cpu / "cpu.max").write_text(f"{self._quota if self._quota else 'max'} {PERIOD_US}")
                else:
                    (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                    (cpu / "cpu.cfs_quota_us").write_text(str(self._quota if self._quota else -1))
        except OSError as e:
            raise CgroupError(f"cannot create the regions' cgroups under {self.h.cpu / self.name}: {e} "
                              "(the lab runs as root; is the cgroup filesystem writable?)") from e
        return self

    def place(self, pids_by_region: Mapping[str, Iterable[int]]) -> int:
        """Move each region's processes into its cgroup(s); processes gone meanwhile are skipped. Returns how many
        were moved."""
        moved = 0
        for region, pids in pids_by_region.items():
            for pid in sorted(set(pids)):
                ok = False
                for d in self.dirs(region):
                    with contextlib.suppress(ProcessLookupError, FileNotFoundError, OSError):
                        (d / "cgroup.procs").write_text(str(pid))
                        ok = True
                moved += ok
        return moved

    def usage(self) -> dict[str, dict[str, float | int | None]]:
        """Per region: CPU-seconds used, seconds throttled and periods throttled, as the kernel counts them."""
        out: dict[str, dict[str, float | int | None]] = {}
        for r in self.regions:
            dirs = self.dirs(r)
            stat = parse_stat((dirs[0] / "cpu.stat").read_text()) if (dirs[0] / "cpu.stat").is_file() else {}
            if self.h.version == 2:
                cpu_s = stat.get("usage_usec", 0) / 1e6
                throttled = stat.get("throttled_usec", 0) / 1e6
            else:
                acct = dirs[1] / "cpuacct.usage" if len(dirs) > 1 else None
                cpu_s = int(acct.read_text()) / 1e9 if acct is not None and acct.is_file() else None
                throttled = stat.get("throttled_time", 0) / 1e9
            out[r] = {"cpu_s": None if cpu_s is None else round(cpu_s, 3), "throttled_s": round(throttled, 3),
                      "nr_throttled": stat.get("nr_throttled", 0), "nr_periods": stat.get("nr_periods", 0)}
        return out

    def close(self) -> None:
        """Every process back to the root cgroup, the regions' cgroups removed."""
        for r in self.regions:
            for d in self.dirs(r):
                root = d.parent.parent
                with contextlib.suppress(OSError):
                    for pid in (d / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):
                            (root / "cgroup.procs").write_text(pid)
                with contextlib.suppress(OSError):
                    d.rmdir()
        for base in {self.dirs(r)[i].parent for r in self.regions for i in range(len(self.dirs(r)))}:
            with contextlib.suppress(OSError):
                base.rmdir()


def region_pids(netns: Mapping[str, str | Path]) -> dict[str, set[int]]:
    """Per region the processes in its network namespace (``/var/run/netns/<name>`` or a path)."""
    out = {}
    for region, ns in netns.items():
        path = Path(ns) if "/" in str(ns) else NETNS_DIR / str(ns)
        try:
            inode = os.stat(path).st_ino
        except OSError:
            continue
        out[region] = own_pids([inode], [])
    return out


def place_trial(cg: RegionCgroups | None, netns: Mapping[str, str | Path]) -> int:
    """The hook: every process of each region's namespace into the region's cgroup (nothing without limits)."""
    return cg.place(region_pids(netns)) if cg is not None else 0


def lab_namespaces(tag: str | None = None) -> dict[str, dict[str, str]]:
    """The lab's region namespaces now (``ww-<tag>-<region>``; hubs, whose names start with ``_``, left out):
    tag → region → namespace name (one tag's only when given)."""
    out: dict[str, dict[str, str]] = {}
    for p in sorted(NETNS_DIR.glob("ww-*")):
        m = re.fullmatch(r"ww-([a-z0-9]{1,6})-([A-Za-z0-9.]+)", p.name)
        if m and (tag is None or m[1] == tag):
            out.setdefault(m[1], {})[m[2]] = p.name
    return out


def watch(cores: float | None, every_s: float = 1.0, tag: str | None = None, out: Path | None = None) -> dict:
    """Place one lab run's region processes into per-region cgroups every ``every_s`` until SIGINT/SIGTERM; then
    the regions' usage (also written to ``out``) and the cgroups removed. ``tag``: the run's (its namespaces'
    ``ww-<tag>-``); None: the first run whose namespaces appear after the watch starts (other labs on the machine
    are left alone)."""
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    before = set(lab_namespaces())
    groups: RegionCgroups | None = None
    started = time.time()
    series: list[dict] = []  # every placement: when, and each region's CPU-seconds so far
    try:
        while not stop:
            if tag is None:
                new = sorted(set(lab_namespaces()) - before)
                tag = new[0] if new else None
            ns = lab_namespaces(tag).get(tag or "", {})
            if ns and (groups is None or set(ns) - set(groups.regions)):
                if groups is not None:
                    groups.close()
                groups = RegionCgroups(tag or "lab", sorted(ns), cores).create()
                print(f"[cgroups] lab {tag}: {len(ns)} region(s), {cores if cores else 'no limit'} core(s) each "
                      f"(cgroup v{groups.h.version})", flush=True)
            if groups is not None:
                place_trial(groups, ns)
                series.append({"t": round(time.time(), 3)} | {r: u["cpu_s"] for r, u in groups.usage().items()})
            time.sleep(every_s)
        report = {"tag": tag, "cores_per_region": cores, "seconds": round(time.time() - started, 1),
                  "regions": groups.usage() if groups is not None else {}, "series": series}
    finally:
        if groups is not None:
            groups.close()
    print(json.dumps({k: v for k, v in report.items() if k != "series"}, indent=1), flush=True)
    if out is not None:
        out.write_text(json.dumps(report, indent=1) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wanwide.providers.lab.cgroups",
                                 description="Per-region CPU limits beside a running lab (see the module's doc).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("watch", help="place the lab's region processes into per-region cgroups until stopped")
    w.add_argument("--cores", type=float, default=None, help="cores per region (omit: counted, not limited)")
    w.add_argument("--every", type=float, default=1.0, help="seconds between placements (default 1)")
    w.add_argument("--tag", default=None, help="the lab run's tag (its namespaces ww-<tag>-*); default: the first "
                   "run that appears after the watch starts")
    w.add_argument("--out", type=Path, default=None, help="write the regions' CPU and throttling here (JSON)")
    args = ap.parse_args(argv)
    try:
        watch(args.cores, args.every, args.tag, args.out)
    except CgroupError as e:
        print(f"cgroups: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
