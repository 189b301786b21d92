"""Record of everything a lab run created, so that a later process can undo it.

One JSON file per run, ``<state dir>/<tag>.json``, rewritten atomically after
every change. It lists network namespaces, host-side links, processes (pid +
start time, so a recycled pid is never killed) and directories to delete. The
owner's pid is stored too: :func:`cleanup_all` leaves runs whose owner is alive
alone unless told otherwise, so that a test can clean up after a killed run
while another run goes on. The Benchmark a run belongs to is stored as
``benchmark``, so that a clean-up can be limited to one's own runs. Namespaces
and links are recorded *before* they are created: a run killed in between
leaves nothing that its record does not name.

State dir: ``$WANWIDE_LAB_STATE_DIR``, else ``/run/wanwide-lab`` when writable
(root), else ``<repo>/.lab``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.providers.lab import procs

log = logging.getLogger(__name__)

_SYSTEM_DIR = Path("/run/wanwide-lab")


def default_state_dir() -> Path:
    env = os.environ.get("WANWIDE_LAB_STATE_DIR")
    if env:
        return Path(env)
    try:
        _SYSTEM_DIR.mkdir(parents=True, exist_ok=True)
        if os.access(_SYSTEM_DIR, os.W_OK):
            return _SYSTEM_DIR
    except OSError:
        pass
    repo = Path(__file__).resolve().parents[4]
    return repo / ".lab"


@dataclass
class LabState:
    """The record of one run; every ``add_*`` call is saved at once."""

    path: Path
    tag: str
    data: dict[str, Any] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @classmethod
    def create(cls, tag: str, state_dir: Path | None = None, benchmark: str | None = None) -> LabState:
        d = Path(state_dir) if state_dir else default_state_dir()
        d.mkdir(parents=True, exist_ok=True)
        st = cls(path=d / f"{tag}.json", tag=tag)
        st.data = {
            "tag": tag,
            "benchmark": benchmark,
            "owner_pid": os.getpid(),
            "owner_start": procs.start_time(os.getpid()),
            "created": time.time(),
            "netns": [],
            "host_links": [],
            "processes": [],
            "dirs": [],
            "info": {},
        }
        st.save()
        return st

    @classmethod
    def load(cls, path: Path) -> LabState:
        st = cls(path=Path(path), tag=Path(path).stem)
        st.data = json.loads(Path(path).read_text())
        for k in ("netns", "host_links", "processes", "dirs"):
            st.data.setdefault(k, [])
        st.data.setdefault("info", {})
        return st

    def save(self) -> None:
        with self._lock:
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
            os.replace(tmp, self.path)

    # -- recording
    def add_netns(self, name: str) -> None:
        with self._lock:
            if name not in self.data["netns"]:
                self.data["netns"].append(name)
            self.save()

    def add_host_link(self, ifname: str) -> None:
        with self._lock:
            if ifname not in self.data["host_links"]:
                self.data["host_links"].append(ifname)
            self.save()

    def add_process(self, pid: int, name: str, netns: str | None = None) -> None:
        with self._lock:
            self.data["processes"].append(
                {"pid": pid, "start": procs.start_time(pid), "name": name, "netns": netns}
            )
            self.save()

    def remove_process(self, pid: int) -> None:
        with self._lock:
            self.data["processes"] = [p for p in self.data["processes"] if p["pid"] != pid]
            self.save()

    def add_dir(self, path: str | Path) -> None:
        with self._lock:
            p = str(path)
            if p not in self.data["dirs"]:
                self.data["dirs"].append(p)
            self.save()

    def set_info(self, key: str, value: Any) -> None:
        with self._lock:
            self.data["info"][key] = value
            self.save()

    def owner_alive(self) -> bool:
        pid = self.data.get("owner_pid")
        if not pid or pid == os.getpid():
            return pid == os.getpid()
        return procs.alive(pid, self.data.get("owner_start"))

    # -- undoing
    def cleanup(self, remove_dirs: bool = True) -> list[str]:
        """Undo everything recorded; returns human-readable notes of what was done.

        Order: processes (recorded ones, then anything still inside the run's
        namespaces), namespaces, host links, directories, the state file.
        """
        notes: list[str] = []
        with self._lock:
            live = [p for p in reversed(self.data["processes"]) if procs.alive(p["pid"], p.get("start"))]
            procs.kill_trees([(p["pid"], p.get("start")) for p in live])  # all at once, then waited for together
            notes += [f"killed {p['name']} pid {p['pid']}" for p in live]
            self.data["processes"] = []
            self.save()
            inside = {ns: netns_pids(ns) for ns in reversed(self.data["netns"]) if netns_exists(ns)}
            procs.kill_trees([(pid, None) for pids in inside.values() for pid in pids])
            notes += [f"killed pid {pid} in netns {ns}" for ns, pids in inside.items() for pid in pids]
            for ns in reversed(self.data["netns"]):
                if netns_exists(ns):
                    r = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
                    if r.returncode == 0:
                        notes.append(f"deleted netns {ns}")
                    else:
                        notes.append(f"netns {ns}: {r.stderr.strip()}")
            self.data["netns"] = []
            self.save()
            for ifname in self.data["host_links"]:
                if Path(f"/sys/class/net/{ifname}").exists():
                    subprocess.run(["ip", "link", "del", ifname], capture_output=True)
                    notes.append(f"deleted link {ifname}")
            self.data["host_links"] = []
            if remove_dirs:
                for d in reversed(self.data["dirs"]):
                    if Path(d).exists():
                        shutil.rmtree(d, ignore_errors=True)
                        notes.append(f"removed {d}")
                self.data["dirs"] = []
            self.save()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for n in notes:
            log.info("lab cleanup %s: %s", self.tag, n)
        return notes


def netns_exists(name: str) -> bool:
    return Path("/run/netns", name).exists()


def netns_pids(name: str) -> list[int]:
    r = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split() if x.strip().isdigit()]


def list_states(state_dir: Path | None = None) -> list[LabState]:
    d = Path(state_dir) if state_dir else default_state_dir()
    out = []
    if d.is_dir():
        for p in sorted(d.glob("*.json")):
            try:
                out.append(LabState.load(p))
            except (OSError, ValueError) as e:
                log.warning("unreadable lab state %s: %s", p, e)
    return out


def cleanup_all(
    state_dir: Path | None = None, include_live: bool = False, prefix: str | None = None,
    benchmarks: set[str] | None = None,
) -> list[str]:
    """Undo every recorded run whose owner process is gone (or all with ``include_live``).

    ``benchmarks``: only the runs of these Benchmarks (another user's runs, even
    killed ones, stay). With ``prefix`` (e.g. ``"ww-"``) also deletes namespaces
    of that prefix that no state file mentions (left by a run whose state dir
    was lost) — also those of runs recorded in *another* state dir, so only on
    request.
    """
    notes: list[str] = []
    known: set[str] = set()
    for st in list_states(state_dir):
        mine = benchmarks is None or st.data.get("benchmark") in benchmarks
        if not mine or (st.owner_alive() and not include_live):
            known.update(st.data["netns"])
            continue
        notes += st.cleanup()
    notes += _drop_temp_files(state_dir)
    if prefix:
        r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(prefix) and name not in known:
                for pid in netns_pids(name):
                    procs.kill_tree(pid, None)
                subprocess.run(["ip", "netns", "del", name], capture_output=True)
                notes.append(f"deleted stray netns {name}")
    return notes


def _drop_temp_files(state_dir: Path | None) -> list[str]:
    """State files half-written by a process killed in :meth:`LabState.save` (``<tag>.tmp<pid>``, pid gone)."""
    d = Path(state_dir) if state_dir else default_state_dir()
    notes = []
    for p in d.glob("*.tmp*") if d.is_dir() else []:
        pid = p.suffix[len(".tmp"):]
        if pid.isdigit() and not procs.alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                notes.append(f"removed {p}")
    return notes


def main(argv: list[str] | None = None) -> int:
    """``python -m wanwide.providers.lab.state [--all] [--state-dir D] [--prefix ww-]``: clean up."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m wanwide.providers.lab.state",
                                 description="Undo lab runs left by killed processes.")
    ap.add_argument("--state-dir", type=Path, default=None)
    ap.add_argument("--all", action="store_true", help="also runs whose owner is alive")
    ap.add_argument("--prefix", default=None,
                    help="also delete namespaces with this prefix that no state file lists")
    a = ap.parse_args(argv)
    for note in cleanup_all(a.state_dir, include_live=a.all, prefix=a.prefix):
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
