"""Galera's write penalty per commit, in round trips, under netem and under linkemu at 3 regions, inside one VM
(issue 48 item 2, the study's central measurement; docs/emulation.md, "Galera's write penalty").

    # on the host, in a VM started with hack/vm.sh up NAME (the whole run is one exec; lines are kept as they come)
    .venv/bin/python bench/galera_penalty.py campaign --vm gp --blocks 6 --out docs/data/emulation/galera-penalty.jsonl
    # inside the VM (what campaign runs there):
    python bench/galera_penalty.py measure --blocks 6 --writes 100

``measure`` builds three copies of the lab's 3-region network (``netns.build``) in the guest, each with one Galera
member per region started by the lab itself (``Services.start_galera`` with the ``DatabaseConfig`` the planner gives
the study's 3-region Benchmark, manifests/examples/study.yaml ``study-3``, at the largest RTT of the run: so every
RTT runs with the same provider options, ``evs.send_window`` 512 and ``evs.user_send_window`` 256 among them):

- ``netem``: every link through the lab's ``NetemShaper`` (a veth pair, ``tc qdisc … netem`` on each end);
- ``linkemu``: every link through ``LinkemuShaper`` (the network's one ``ww-linkemu`` process);
- ``none``: plain veth pairs, nothing shaped: the VM's own noise.

A cell is one cluster at one RTT (every pair ``rtt/2`` each way, set with ``Network.reshape``, the lab's way of
re-shaping a shared deployment): 10 pings r1→r2 and r1→r3 (the RTT in force), then a client in r1's namespace
(``client``: one pymysql connection over TCP to r1's member, autocommit) makes ``--warmup`` writes it does not count,
then ``--writes`` committed single-row writes (INSERT of a new row, then UPDATE of it, alternately) and times each
``execute`` (the statement's round trip to the member and its commit, certification included). It reads Galera's
counters before and after and the provider options in force, over the same connection.

A block (``schedule``, pure) measures every cell once: ``none`` first, the two shapers in ABBA order across blocks
(netem first in blocks 0, 2, …, linkemu first in 1, 3, …), each shaper's RTTs ascending or descending so that each
shaper sees both orders, and ``none`` again last. Each cell is one JSON line; ``campaign`` adds the host's load
(sampled every 5 s, the samples between this line and the one before) and appends it to ``--out`` at once.
docs/data/emulation.py turns the file into the page's tables: the penalty of a block and shaper is
(median commit at RTT r − median commit at RTT 0) / r, in round trips.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGIONS = ("r1", "r2", "r3")
STUDY = ROOT / "manifests" / "examples" / "study.yaml"
STUDY_BENCHMARK = "study-3"
ROOT_PASSWORD = "wanwide-root"  # the lab's (providers/lab/bringup.py)
STATUS = ("wsrep_cluster_size", "wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_replicated",
          "wsrep_local_commits", "wsrep_local_cert_failures", "wsrep_local_bf_aborts", "wsrep_flow_control_paused_ns",
          "wsrep_flow_control_sent", "wsrep_flow_control_recv", "wsrep_local_send_queue_avg", "wsrep_evs_repl_latency")
WINDOWS = ("evs.send_window", "evs.user_send_window")


def schedule(blocks: int, shapers: list[str], rtts: list[float], none: bool = True) -> list[tuple[int, str, float, str]]:
    """The cells in the order they run: (block, arm, rtt_ms, position). Per block: ``none`` (first), the shapers in
    ABBA order across blocks, each shaper's RTTs ascending in its even halves and descending in its odd ones (so each
    shaper sees both orders), then ``none`` (last)."""
    out: list[tuple[int, str, float, str]] = []
    up = sorted(rtts)
    for k in range(blocks):
        if none:
            out.append((k, "none", 0.0, "first"))
        order = list(shapers) if k % 2 == 0 else list(reversed(shapers))
        for j, s in enumerate(order):
            half = 2 * k + j
            for r in (up if half % 2 == 0 else list(reversed(up))):
                out.append((k, s, float(r), "first" if not none and j == 0 and not out or
                            (not none and out and out[-1][0] != k) else "shaped"))
        if none:
            out.append((k, "none", 0.0, "last"))
    return out


def study_database(max_rtt_ms: float):
    """The DatabaseConfig the planner gives the study's 3-region Benchmark (its provider and server options)."""
    import yaml

    from wanwide.core.api.benchmark import BenchmarkSpec
    from wanwide.core.plan.services import database_config

    docs = [d for d in yaml.safe_load_all(STUDY.read_text())
            if d and d.get("kind") == "Benchmark" and d["metadata"]["name"] == STUDY_BENCHMARK]
    if not docs:
        raise SystemExit(f"{STUDY}: no Benchmark {STUDY_BENCHMARK!r}")
    spec = BenchmarkSpec.model_validate(docs[0]["spec"])
    return database_config(spec, "galera", max_rtt_ms, members=len(REGIONS))


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _pressure() -> str | None:
    with contextlib.suppress(OSError, IndexError):
        return Path("/proc/pressure/cpu").read_text().splitlines()[0]
    return None


# ---------------------------------------------------------------- in r1's namespace
def cmd_client(a: argparse.Namespace) -> int:
    """``--warmup`` + ``--writes`` autocommit writes on one connection; each one's time; Galera's counters around them."""
    import pymysql

    c = pymysql.connect(host=a.host, port=a.port, user="root", password=a.password, database="penalty",
                        autocommit=True, connect_timeout=30)
    cur = c.cursor()

    def status() -> dict[str, str]:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (" + ",".join(["%s"] * len(STATUS)) + ")", STATUS)
        return {k: v for k, v in cur.fetchall()}

    cur.execute("SELECT @@wsrep_provider_options")
    opts = {k.strip(): v.strip() for k, _, v in (kv.partition("=") for kv in cur.fetchone()[0].split(";"))}
    before = status()
    ms: list[float] = []
    kinds: list[str] = []
    for i in range(a.warmup + a.writes):
        row = a.first_id + i // 2
        if i % 2 == 0:
            sql, args, kind = "INSERT INTO t (id, v) VALUES (%s, %s)", (row, i), "insert"
        else:
            sql, args, kind = "UPDATE t SET v = v + 1 WHERE id = %s", (row,), "update"
        t0 = time.perf_counter_ns()
        cur.execute(sql, args)
        ms.append((time.perf_counter_ns() - t0) / 1e6)
        kinds.append(kind)
    after = status()
    c.close()
    print(json.dumps({"warmup_ms": ms[: a.warmup], "commit_ms": ms[a.warmup:], "kinds": kinds[a.warmup:],
                      "status_before": before, "status_after": after,
                      "provider_options": {k: opts.get(k) for k in WINDOWS}}))
    return 0


# ---------------------------------------------------------------- inside the VM
class Arm:
    """One 3-region lab network and its Galera cluster."""

    def __init__(self, name: str, work: Path) -> None:
        from wanwide.providers.lab import netns
        from wanwide.providers.lab.services import Services

        self.name = name
        if name == "none":  # plain veth pairs: nothing shaped, no shaper on the path
            self.net = netns.build(list(REGIONS), {}, shaper="auto", host_links=False)
            self.net.shaper = "none"
        else:
            self.net = netns.build(list(REGIONS), {}, shaper=name, shapeable=True, host_links=False)
        run_dir = work / name
        run_dir.mkdir(parents=True, exist_ok=True)
        self.svc = Services(self.net, run_dir)
        self.members: list = []
        self.start_s = 0.0
        self.rtt = 0.0
        self.next_id = 1
        self.inserted = 0

    def install_first(self, cfg) -> None:
        """The first member's data directory, as start_galera would make it (``mariadb-install-db``; the others are
        copied from it): one cluster at a time, since three at once under TCG outran the lab's 120 s for it."""
        from wanwide.providers.lab.procs import LabError

        d, data = self.svc._mariadb_dirs(REGIONS[0], "galera", cfg.in_memory)
        try:
            self.svc._install_db(d, data)
        except LabError:  # timed out on a busy host: once more, from an empty directory
            for child in data.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
            self.svc._install_db(d, data)

    def start(self, cfg, timeout: float) -> Arm:
        """The lab's Galera on this network (as providers/lab/bringup.py starts it), root over TCP, the table."""
        t0 = time.monotonic()
        self.members = self.svc.start_galera(list(REGIONS), in_memory=cfg.in_memory, provider_options=cfg.galera,
                                             server=cfg.server, timeout=timeout)
        self.start_s = time.monotonic() - t0
        self.svc.sql(self.members[0], f"CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '{ROOT_PASSWORD}'; "
                                      "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%'; FLUSH PRIVILEGES; "
                                      "CREATE DATABASE IF NOT EXISTS penalty; "
                                      "CREATE TABLE IF NOT EXISTS penalty.t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
        return self

    def shape(self, rtt_ms: float) -> float:
        """Every pair at ``rtt_ms`` (half each way); seconds it took."""
        from wanwide.core.plan.links import OneWay

        t0 = time.monotonic()
        if self.name != "none" and rtt_ms != self.rtt:
            ow = OneWay(delay_ms=rtt_ms / 2)
            self.net.reshape({(a, b): ow for a in REGIONS for b in REGIONS if a != b})
        self.rtt = rtt_ms
        return time.monotonic() - t0

    def shaper_counters(self) -> dict:
        """What the shaper shows of r1's links: netem's qdiscs (``tc -s qdisc`` in r1), linkemu's per-link counters."""
        from wanwide.providers.lab import linkemu

        if self.name == "netem":
            return {"tc_r1": self.net.exec_in("r1", ["tc", "-s", "qdisc", "show"], check=False).stdout}
        if self.name == "linkemu":
            with contextlib.suppress(Exception):
                return {"linkemu": linkemu.emulator_for(self.net.sock_dir).stats()}
        return {}

    def cell(self, writes: int, warmup: int) -> dict:
        rec: dict = {"link_kind": sorted({lk.kind for lk in self.net.pairs.values()})}
        rec["ping_r2_ms"] = self.net.measure_rtt("r1", "r2", samples=10, method="ping", interval=0.05, timeout=2)
        rec["ping_r3_ms"] = self.net.measure_rtt("r1", "r3", samples=10, method="ping", interval=0.05, timeout=2)
        rec["shaper_before"] = self.shaper_counters()
        rec["guest_load_before"] = _loadavg()
        t0 = time.time()
        r = self.net.exec_in("r1", [sys.executable, str(Path(__file__).resolve()), "client", "--host",
                                    self.members[0].host, "--port", str(self.members[0].port), "--password",
                                    ROOT_PASSWORD, "--writes", str(writes), "--warmup", str(warmup),
                                    "--first-id", str(self.next_id)], timeout=120 + writes * 5)
        rec["client_seconds"] = round(time.time() - t0, 2)
        rec.update(json.loads(r.stdout.strip().splitlines()[-1]))
        n = warmup + writes
        self.next_id += (n + 1) // 2
        self.inserted += (n + 1) // 2
        rec["shaper_after"] = self.shaper_counters()
        rec["guest_load_after"] = _loadavg()
        rec["guest_cpu_pressure"] = _pressure()
        rec["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0))
        return rec

    def rows_everywhere(self) -> dict[str, int]:
        """Rows of the table on each member: every insert reached every region."""
        return {m.region: int(self.svc.sql(m, "SELECT COUNT(*) FROM penalty.t").strip()) for m in self.members}

    def close(self) -> None:
        try:
            self.svc.stop_all()
        finally:
            self.net.destroy()


def cmd_measure(a: argparse.Namespace) -> int:
    rtts = [float(x) for x in a.rtts.split(",")]
    shapers = a.shapers.split(",")
    cfg = study_database(max(rtts))
    t_start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="ww-galera-penalty-", dir="/var/tmp"))
    os.chmod(work, 0o755)
    arms: dict[str, Arm] = {}
    meta = {"kernel": os.uname().release, "vm": os.uname().nodename, "writes": a.writes, "warmup": a.warmup,
            "galera_options": cfg.galera, "server_options": cfg.server, "in_memory": cfg.in_memory}
    try:
        for name in (["none"] if a.none else []) + shapers:
            arms[name] = Arm(name, work)
        # the three clusters start at once: under TCG a joiner's state transfer (the rsync SST script) takes minutes,
        # most of it waiting
        for arm_ in arms.values():
            arm_.install_first(cfg)
        with ThreadPoolExecutor(max_workers=len(arms)) as ex:
            for arm_ in ex.map(lambda x: x.start(cfg, a.start_timeout), list(arms.values())):
                print(json.dumps({"event": "cluster", "arm": arm_.name, "start_s": round(arm_.start_s, 1),
                                  "link_kind": sorted({lk.kind for lk in arm_.net.pairs.values()}),
                                  "guest_load": _loadavg(), **meta}), flush=True)
        block_s: list[float] = []
        t_block = time.monotonic()
        for i, (block, arm, rtt, pos) in enumerate(schedule(a.blocks, shapers, rtts, a.none)):
            if pos == "first":
                if block:
                    block_s.append(time.monotonic() - t_block)
                t_block = time.monotonic()
                if a.max_minutes and (t_block - t_start + max(block_s, default=0.0)) / 60 > a.max_minutes:
                    print(json.dumps({"event": "stopped", "blocks_done": block, "reason":
                                      f"another block would end after --max-minutes {a.max_minutes:g}"}), flush=True)
                    break
            where = {"seq": i, "block": block, "arm": arm, "rtt_ms": rtt, "position": pos}
            try:
                shape_s = arms[arm].shape(rtt)
                time.sleep(a.settle)
                rec = {"event": "cell", **where, "shape_seconds": round(shape_s, 2), **meta,
                       **arms[arm].cell(a.writes, a.warmup)}
            except Exception as e:  # recorded (the page counts them); the run goes on
                rec = {"event": "cell-failed", **where, "error": str(e)[-2000:],
                       "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            print(json.dumps(rec), flush=True)
        for name, arm_ in arms.items():
            print(json.dumps({"event": "rows", "arm": name, "inserted": arm_.inserted,
                              "rows": arm_.rows_everywhere()}), flush=True)
    finally:
        for arm_ in arms.values():
            with contextlib.suppress(Exception):
                arm_.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


# ---------------------------------------------------------------- on the host
def cmd_campaign(a: argparse.Namespace) -> int:
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(ROOT / "hack" / "vm.sh"), "exec", a.vm, "--cd", str(ROOT), "--", "env",
           f"PYTHONPATH={ROOT / 'operator'}", a.python, "bench/galera_penalty.py", "measure",
           "--blocks", str(a.blocks), "--writes", str(a.writes), "--warmup", str(a.warmup), "--rtts", a.rtts,
           "--shapers", a.shapers, "--settle", str(a.settle), "--start-timeout", str(a.start_timeout),
           "--max-minutes", str(a.max_minutes), *([] if a.none else ["--no-none"])]
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            stop.wait(5.0)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    te = threading.Thread(target=lambda: err.extend(p.stderr), daemon=True)
    te.start()
    seen = 0
    n = 0
    assert p.stdout is not None
    for ln in p.stdout:
        if not ln.startswith("{"):
            continue
        rec = json.loads(ln)
        now = samples[seen:] or samples[-1:]
        seen = len(samples)
        s = sorted(now) or [float("nan")]
        rec |= {"host_load1_min": s[0], "host_load1_median": s[len(s) // 2], "host_load1_max": s[-1],
                "vm_spec": a.vm_spec}
        with out.open("a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
        n += 1
        what = (f"block {rec['block']} {rec['arm']} {rec['rtt_ms']:g} ms: median "
                f"{sorted(rec['commit_ms'])[len(rec['commit_ms']) // 2]:.1f} ms" if rec["event"] == "cell"
                else f"{rec['event']} {rec.get('arm', '')}")
        print(f"{time.time() - t0:6.0f} s  {what}  (host load {s[len(s) // 2]:.1f})", file=sys.stderr, flush=True)
    rc = p.wait()
    stop.set()
    te.join(timeout=5)
    if rc != 0:
        print("".join(err)[-4000:], file=sys.stderr)
    print(f"{n} lines in {time.time() - t0:.0f} s, exit {rc}", file=sys.stderr)
    return rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("measure", "campaign"):
        s = sub.add_parser(name)
        s.add_argument("--blocks", type=int, default=6)
        s.add_argument("--writes", type=int, default=100, help="timed writes per cell")
        s.add_argument("--warmup", type=int, default=10, help="writes per cell before the timed ones")
        s.add_argument("--rtts", default="0,50,100", help="ms, comma-separated (0 needed: the penalty's base)")
        s.add_argument("--shapers", default="netem,linkemu")
        s.add_argument("--settle", type=float, default=1.0, help="s after re-shaping, before the pings")
        s.add_argument("--start-timeout", type=float, default=1200, help="s for each Galera member to be Synced")
        s.add_argument("--no-none", dest="none", action="store_false",
                       help="no unshaped cluster (netem at RTT 0 is a plain veth pair already): a third less memory")
        s.add_argument("--max-minutes", type=float, default=0,
                       help="start no block that would end after this (the longest block so far as its estimate); 0: all")
    c = sub.choices["campaign"]
    c.add_argument("--vm", required=True)
    c.add_argument("--vm-spec", default="", help="recorded with each line (e.g. 'tcg 2 vCPU 4096 MiB')")
    c.add_argument("--python", default=os.environ.get("WANWIDE_VM_PYTHON", str(ROOT / ".venv" / "bin" / "python")))
    c.add_argument("--out", required=True)
    cl = sub.add_parser("client")
    cl.add_argument("--host", required=True)
    cl.add_argument("--port", type=int, default=3306)
    cl.add_argument("--password", required=True)
    cl.add_argument("--writes", type=int, required=True)
    cl.add_argument("--warmup", type=int, default=0)
    cl.add_argument("--first-id", type=int, required=True)
    a = p.parse_args(argv)
    if a.cmd in ("measure", "campaign") and 0.0 not in [float(x) for x in a.rtts.split(",")]:
        p.error("--rtts: include 0 (the penalty is measured against RTT 0), e.g. --rtts 0,50,100")
    return {"client": cmd_client, "measure": cmd_measure, "campaign": cmd_campaign}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
