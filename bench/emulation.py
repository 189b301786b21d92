"""linkemu against netem (and VDE wirefilter) on the same work, inside one VM (issue 48 item 2; docs/emulation.md).

    # on the host: boots nothing itself; give it a VM started with hack/vm.sh up NAME
    .venv/bin/python bench/emulation.py campaign --vm em --rounds 3 --out docs/data/emulation/measurements.jsonl
    # inside a VM (what campaign runs there, one shaper and round at a time):
    python bench/emulation.py measure --shaper netem --round 0 [--shapes ci]

``measure`` builds the lab's own two-region network (``netns.build(..., shaper=S, shapeable=True)``,
so every shape goes through ``shaping``'s netem/linkemu/wirefilter code; ``none`` is a plain veth pair,
the VM's noise floor) and, per shape set with ``Network.set_link``, measures:

- delay and jitter shapes: RTT of ``--pings`` ICMP echoes (``Network.measure_rtt(method="ping")``) and
  of the lab's own probe, TCP connects (``method="tcp"``, what the lifecycle's network check uses);
- loss shapes (one direction, a→b): an iperf3 UDP stream a→b, datagrams sent and lost (the receiver's
  sequence numbers); a run whose stream set-up datagram the loss dropped is run again (``UDP_TRIES``);
- rate shapes (both directions): iperf3 TCP a→b, the receiver's goodput;
- the partition (loss 100 % both ways): pings that came through while cut, then the time from lifting
  the cut to the first answer.

Every measurement is one JSON line: shaper, round, shape, what was requested, the raw samples, the
guest's load; ``campaign`` adds the host's load (sampled every 5 s while that shaper ran) and appends
to ``--out``. docs/data/emulation.py turns the file into docs/emulation.md's tables.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Shape:
    name: str
    kind: str  # delay | loss | rate | partition
    a_to_b: dict
    b_to_a: dict
    rtt_ms: float = 0.0  # the RTT requested (delay shapes)


def _ow(delay: float = 0.0, jitter: float = 0.0, loss: float = 0.0, rate: float | None = None) -> dict:
    return {"delay_ms": delay, "jitter_ms": jitter, "loss_pct": loss, "rate_mbit": rate}


def shapes(which: str = "full") -> list[Shape]:
    """The link shapes, each direction's OneWay as a dict. RTT r: r/2 each way; loss in one direction
    (a→b, what the UDP stream crosses); rate both ways; jitter ±10 ms uniform each way on a 100 ms RTT."""
    out = [Shape("none", "delay", _ow(), _ow(), 0.0)]
    rtts = (1, 10, 50, 100, 300) if which == "full" else (10, 100)
    out += [Shape(f"rtt{r:g}", "delay", _ow(r / 2), _ow(r / 2), float(r)) for r in rtts]
    out.append(Shape("jitter", "delay", _ow(50, 10), _ow(50, 10), 100.0))
    losses = (0.1, 1, 10) if which == "full" else (10,)
    out += [Shape(f"loss{x:g}", "loss", _ow(loss=x), _ow(), 0.0) for x in losses]
    rates = (1, 10, 100) if which == "full" else (10,)
    out += [Shape(f"rate{x:g}", "rate", _ow(rate=x), _ow(rate=x), 0.0) for x in rates]
    out.append(Shape("partition", "partition", _ow(loss=100), _ow(loss=100), 0.0))
    return out


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ---------------------------------------------------------------- inside the VM
def _iperf(net, args: list[str], seconds: float) -> dict:
    """One iperf3 client run a→b against a one-off server in b; its JSON."""
    server = net.popen_in("b", ["iperf3", "-s", "-1", "-B", net.address("b"), "-p", "5201"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # the server listens
            r = net.exec_in("b", ["ss", "-ltn", "sport = :5201"], check=False)
            if "5201" in r.stdout:
                break
            time.sleep(0.1)
        r = net.exec_in("a", ["iperf3", "-c", net.address("b"), "-p", "5201", "-J", *args],
                        check=False, timeout=seconds + 60)
        return json.loads(r.stdout) if r.stdout.strip() else {"error": r.stderr[-400:]}
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=10)
        if server.poll() is None:
            server.kill()
            server.wait()


# iperf3 (3.12, Debian 12) sets a UDP stream up with one datagram from the client and one answer, with no
# retransmission: when the loss being measured drops the client's datagram, the run ends after the client's
# 30 s wait, with this error and no interval measured (esnet/iperf#862, #351). With 10 % loss a→b that is
# one run in ten: such a run measured nothing, so it is run again, at most UDP_TRIES times in all, and each
# lost set-up is recorded (``udp_setup_lost``).
UDP_SETUP_LOST = "unable to read from stream socket"
UDP_TRIES = 4


def _udp_setup_lost(j: dict) -> bool:
    return UDP_SETUP_LOST in (j.get("error") or "") and not j.get("intervals")


def _counters(net) -> dict:
    """What each end's device and the shaper itself counted: ``ip -s link`` (packets, drops) of the link's
    two devices, netem's ``tc -s qdisc`` on the a end, linkemu's per-direction frames/lost/overflow."""
    from wanwide.providers.lab import linkemu

    link = net.pairs[("a", "b")]
    out: dict = {}
    for end, ifname in (("a", link.if_a), ("b", link.if_b)):
        r = net.exec_in(end, ["ip", "-s", "-j", "link", "show", "dev", ifname], check=False)
        with contextlib.suppress(ValueError, IndexError, KeyError):
            st = json.loads(r.stdout)[0]["stats64"]
            out[f"dev_{end}"] = {k: {f: st[k][f] for f in ("packets", "dropped")} for k in ("rx", "tx")}
    if link.kind == "netem":
        out["tc_a"] = net.exec_in("a", ["tc", "-s", "qdisc", "show", "dev", link.if_a], check=False).stdout
    if link.kind == "linkemu" and link.mgmt:
        sock, lid = link.mgmt.rsplit("#", 1)
        with contextlib.suppress(Exception):
            out["linkemu"] = linkemu.Emulator(sock=Path(sock), pid=link.pids.get("linkemu", 0)).stats().get(int(lid))
    return out


def measure_shape(net, sh: Shape, pings: int, udp_packets: int, udp_pps: int, tcp_seconds: int) -> dict:
    from wanwide.core.plan.links import OneWay

    rec: dict = {"shape": sh.name, "kind": sh.kind, "a_to_b": sh.a_to_b, "b_to_a": sh.b_to_a,
                 "rtt_ms": sh.rtt_ms}
    if net.shaper != "none":
        net.set_link("a", "b", OneWay(**sh.a_to_b))
        net.set_link("b", "a", OneWay(**sh.b_to_a))
    time.sleep(0.5)
    rec["guest_load_before"] = _loadavg()
    rec["counters_before"] = _counters(net)
    t0 = time.time()
    if sh.kind == "delay":
        interval = 0.02
        rec["ping_interval_s"] = interval
        rec["ping_sent"] = pings
        rec["ping_ms"] = net.measure_rtt("a", "b", samples=pings, method="ping", interval=interval, timeout=2)
        rec["tcp_sent"] = 20
        rec["tcp_ms"] = net.measure_rtt("a", "b", samples=20, method="tcp", interval=0.05, timeout=2)
    elif sh.kind == "loss":
        secs = udp_packets / udp_pps
        rec["udp_pps"] = udp_pps
        lost_setups: list[str] = []
        for _ in range(UDP_TRIES):
            j = _iperf(net, ["-u", "-l", "100", "-w", "4M", "-b", str(udp_pps * 100 * 8), "-t", f"{secs:g}"], secs)
            if not _udp_setup_lost(j):
                break
            lost_setups.append(j["error"])
        rec["udp_setup_lost"] = lost_setups
        s = (j.get("end") or {}).get("sum") or {}
        rec["udp_sent"] = s.get("packets")
        rec["udp_lost"] = s.get("lost_packets")
        rec["iperf_error"] = j.get("error")
    elif sh.kind == "rate":
        rec["tcp_seconds"] = tcp_seconds
        j = _iperf(net, ["-t", str(tcp_seconds), "-O", "2"], tcp_seconds + 2)
        end = j.get("end") or {}
        rec["goodput_bps"] = (end.get("sum_received") or {}).get("bits_per_second")
        rec["retransmits"] = (end.get("sum_sent") or {}).get("retransmits")
        rec["iperf_error"] = j.get("error")
    elif sh.kind == "partition":
        rec["ping_sent"] = 100
        cut = net.measure_rtt("a", "b", samples=100, method="ping", interval=0.01, timeout=1)
        rec["ping_through"] = len(cut)
        # a ping every 10 ms runs across the lift; the first answer's receive time (-D) less the lift's
        watch = net.popen_in("a", ["ping", "-n", "-D", "-i", "0.01", "-c", "400", "-W", "1", net.address("b")],
                             stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
        t_lift = time.time()
        net.set_link("a", "b", OneWay())
        net.set_link("b", "a", OneWay())
        t_lifted = time.time()  # the shaper has applied the lift (netem: tc runs; linkemu: a socket command)
        out, _ = watch.communicate(timeout=60)
        got = [float(m) for m in re.findall(r"^\[([0-9.]+)\] \d+ bytes from", out, re.M)]
        back = (min(got) - t_lift) * 1000 if got else None
        rec["lift_ms"] = (t_lifted - t_lift) * 1000
        rec["resume_after_lift_ms"] = (min(got) - t_lifted) * 1000 if got else None
        rec["resume_ms"] = back
    rec["counters_after"] = _counters(net)
    rec["seconds"] = round(time.time() - t0, 2)
    rec["guest_load_after"] = _loadavg()
    rec["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0))
    return rec


def cmd_measure(a: argparse.Namespace) -> int:
    from wanwide.providers.lab import netns

    todo = shapes(a.shapes)
    if a.only:
        todo = [s for s in todo if s.name in a.only.split(",")]
    for k in ("net.core.rmem_max", "net.core.wmem_max"):  # iperf3 -w 4M (UDP bursts after a late wake-up)
        subprocess.run(["sysctl", "-q", "-w", f"{k}=8388608"], check=False)
    rng = random.Random(f"{a.seed}-{a.round}-{a.shaper}")
    rng.shuffle(todo)  # each round and shaper in its own order: no shape always first or last
    if a.shaper == "none":  # the VM's noise floor: a plain veth pair, nothing shaped
        todo = [s for s in todo if s.name == "none"] + [
            Shape("udp-floor", "loss", _ow(), _ow()), Shape("tcp-floor", "rate", _ow(), _ow())]
        net = netns.build(["a", "b"], {}, shaper="auto", host_links=False)
        net.shaper = "none"
    else:
        net = netns.build(["a", "b"], {}, shaper=a.shaper, shapeable=True, host_links=False)
    meta = {"shaper": a.shaper, "round": a.round, "kernel": os.uname().release,
            "link_kind": net.describe()["links"][0]["kind"], "vm": os.uname().nodename}
    try:
        for sh in todo:
            rec = {**meta, **measure_shape(net, sh, a.pings, a.udp_packets, a.udp_pps, a.tcp_seconds)}
            print(json.dumps(rec), flush=True)
    finally:
        net.destroy()
    return 0


# ---------------------------------------------------------------- on the host
class HostLoad:
    """The host's load sampled every ``every`` s while a block runs (the guest cannot see it)."""

    def __init__(self, every: float = 5.0) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, args=(every,), daemon=True)

    def _run(self, every: float) -> None:
        while not self._stop.is_set():
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            self._stop.wait(every)

    def __enter__(self) -> HostLoad:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()

    def summary(self) -> dict:
        s = sorted(self.samples) or [float("nan")]
        return {"host_load1_min": s[0], "host_load1_median": s[len(s) // 2], "host_load1_max": s[-1]}


def cmd_campaign(a: argparse.Namespace) -> int:
    vm = str(ROOT / "hack" / "vm.sh")
    py = a.python
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shapers = a.shapers.split(",")
    for rnd in range(a.first_round, a.first_round + a.rounds):
        order = list(shapers)
        random.Random(f"{a.seed}-{rnd}").shuffle(order)
        for shaper in order:
            cmd = [vm, "exec", a.vm, "--cd", str(ROOT), "--", "env", f"PYTHONPATH={ROOT / 'operator'}", py,
                   "bench/emulation.py", "measure", "--shaper", shaper, "--round", str(rnd), "--shapes", a.shapes,
                   "--pings", str(a.pings), "--udp-packets", str(a.udp_packets), "--udp-pps", str(a.udp_pps),
                   "--tcp-seconds", str(a.tcp_seconds), "--seed", str(a.seed), *(["--only", a.only] if a.only else [])]
            t0 = time.time()
            with HostLoad() as hl:
                r = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
            print(f"round {rnd} {shaper}: {len(lines)} measurements in {time.time() - t0:.0f} s, "
                  f"host load {hl.summary()}, exit {r.returncode}", file=sys.stderr, flush=True)
            if r.returncode != 0:
                print(r.stderr[-3000:], file=sys.stderr)
            with out.open("a") as f:
                for ln in lines:
                    rec = json.loads(ln)
                    rec.update(hl.summary())
                    rec["vm_spec"] = a.vm_spec
                    f.write(json.dumps(rec, sort_keys=True) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("measure", "campaign"):
        s = sub.add_parser(name)
        s.add_argument("--shapes", default="full", choices=("full", "ci"))
        s.add_argument("--only", default="", help="comma-separated shape names (default: all of --shapes)")
        s.add_argument("--pings", type=int, default=200)
        s.add_argument("--udp-packets", type=int, default=30000)
        s.add_argument("--udp-pps", type=int, default=1000)
        s.add_argument("--tcp-seconds", type=int, default=8)
        s.add_argument("--seed", type=int, default=48)
    m = sub.choices["measure"]
    m.add_argument("--shaper", required=True, choices=("netem", "linkemu", "wirefilter", "none"))
    m.add_argument("--round", type=int, default=0)
    c = sub.choices["campaign"]
    c.add_argument("--vm", required=True)
    c.add_argument("--vm-spec", default="", help="recorded with each line (e.g. 'tcg 2 vCPU 2048 MiB')")
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--first-round", type=int, default=0)
    c.add_argument("--shapers", default="none,netem,linkemu,wirefilter")
    c.add_argument("--python", default=os.environ.get("WANWIDE_VM_PYTHON", str(ROOT / ".venv" / "bin" / "python")))
    c.add_argument("--out", required=True)
    a = p.parse_args(argv)
    return cmd_measure(a) if a.cmd == "measure" else cmd_campaign(a)


if __name__ == "__main__":
    sys.exit(main())
