"""WAN shaping of one point-to-point link between two region namespaces.

Three shapers, same contract: ``connect(link)`` creates the link device in both
namespaces (named ``link.if_a`` in ``link.ns_a`` and ``link.if_b`` in
``link.ns_b``) and applies ``link.a_to_b`` / ``link.b_to_a``; ``update`` changes
the shaping of a live link.

- ``netem``: a veth pair, ``tc qdisc … root netem`` on each end shapes the
  traffic leaving that end (delay, jitter, loss, rate). Chosen when a probe
  namespace accepts a netem qdisc.
- ``wirefilter`` (VDE): each end is a TAP device owned by a ``vde_switch`` run
  inside that end's namespace; a ``wirefilter -v sockA:sockB`` joins the two
  switches and delays/drops/limits each direction (LR = A→B, RL = B→A).
  The fallback when neither netem nor linkemu is to be had.
- ``linkemu`` (``linkemu.py``): a TAP device at each end, both held by the network's one
  ``ww-linkemu`` process, which delays/drops/paces each direction. Used when the kernel has no netem.

A link whose both directions are no-ops is a plain veth pair whatever the
shaper (no user-space hop, LAN latency).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.core.plan.links import OneWay
from wanwide.providers.lab import linkemu, procs
from wanwide.providers.lab.procs import LabError

SHAPERS = ("netem", "linkemu", "wirefilter")


@dataclass
class Link:
    """One point-to-point link; ``a``/``b`` are region names."""

    a: str
    b: str
    ns_a: str
    ns_b: str
    if_a: str
    if_b: str
    a_to_b: OneWay
    b_to_a: OneWay
    sock_dir: Path
    kind: str = ""  # "veth", "netem" or "wirefilter"
    pids: dict[str, int] = field(default_factory=dict)
    mgmt: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "if_a": self.if_a,
            "if_b": self.if_b,
            "kind": self.kind,
            "a_to_b": dataclasses.asdict(self.a_to_b),
            "b_to_a": dataclasses.asdict(self.b_to_a),
        }


def netem_available() -> bool:
    """True when ``tc qdisc add … root netem`` works (tried in a throw-away namespace)."""
    if not shutil.which("tc"):
        return False
    ns = f"ww-probe-{os.getpid()}"
    try:
        if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
            return False
        subprocess.run(["ip", "-n", ns, "link", "add", "p0", "type", "dummy"], capture_output=True)
        r = subprocess.run(
            ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "p0", "root", "netem",
             "delay", "1ms"],
            capture_output=True,
        )
        return r.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def wirefilter_available() -> bool:
    return bool(shutil.which("wirefilter") and shutil.which("vde_switch"))


def select_shaper(forced: str | None = None) -> str:
    """``forced`` (else $WANWIDE_LAB_SHAPER) when given and usable; ``auto``: netem, else linkemu, else
    wirefilter (linkemu carries a 45-member Galera's chatter with one process where VDE takes three per
    link: docs/lab-layout.md)."""
    if forced in (None, "auto"):
        forced = os.environ.get("WANWIDE_LAB_SHAPER") or "auto"
    if forced == "auto":
        if netem_available():
            return "netem"
        if linkemu.available():
            return "linkemu"
        if wirefilter_available():
            return "wirefilter"
        raise LabError(
            "no WAN shaper: the kernel has no netem qdisc, no C compiler builds linkemu and VDE wirefilter "
            "is missing (run hack/install-lab.sh)"
        )
    if forced not in SHAPERS:
        raise LabError(f"unknown shaper {forced!r}; one of {SHAPERS} or 'auto'")
    if forced == "netem" and not netem_available():
        raise LabError("shaper netem forced but this kernel has no netem qdisc")
    if forced == "wirefilter" and not wirefilter_available():
        raise LabError("shaper wirefilter forced but wirefilter/vde_switch are missing")
    if forced == "linkemu" and not linkemu.available():
        raise LabError("shaper linkemu forced but it cannot be built here (no cc or no /dev/net/tun)")
    return forced


# ---------------------------------------------------------------- veth (no shaping)
def _veth(link: Link) -> None:
    procs.run(["ip", "link", "add", link.if_a, "netns", link.ns_a, "type", "veth",
               "peer", "name", link.if_b, "netns", link.ns_b])


# ---------------------------------------------------------------- netem
def netem_args(ow: OneWay) -> list[str]:
    args = ["netem", "limit", "100000"]
    if ow.delay_ms or ow.jitter_ms:
        args += ["delay", f"{ow.delay_ms:g}ms"]
        if ow.jitter_ms:
            args += [f"{ow.jitter_ms:g}ms"]
    if ow.loss_pct:
        args += ["loss", f"{ow.loss_pct:g}%"]
    if ow.rate_mbit:
        args += ["rate", f"{ow.rate_mbit:g}mbit"]
    return args


class NetemShaper:
    name = "netem"

    def connect(self, link: Link, state: Any = None) -> None:
        _veth(link)
        link.kind = "netem"
        self.update(link, link.a_to_b, link.b_to_a, first=True)

    def update(self, link: Link, a_to_b: OneWay, b_to_a: OneWay, first: bool = False) -> None:
        for ns, ifname, ow in ((link.ns_a, link.if_a, a_to_b), (link.ns_b, link.if_b, b_to_a)):
            if not first:
                procs.run(["tc", "qdisc", "del", "dev", ifname, "root"], netns=ns, check=False)
            if not ow.is_noop:
                procs.run(["tc", "qdisc", "add", "dev", ifname, "root", *netem_args(ow)], netns=ns)
        link.a_to_b, link.b_to_a = a_to_b, b_to_a


# ---------------------------------------------------------------- wirefilter
WIREFILTER_OVERHEAD_MS = 0.3
"""Measured one-way latency of a zero-delay wirefilter path (TAP → vde_switch →
wirefilter → vde_switch → TAP) plus its timer rounding, per direction."""


def wirefilter_delay(delay_ms: float) -> int:
    """The ``-d`` value for a wanted one-way delay.

    wirefilter keeps whole milliseconds (4.7 acts as 4) and its path adds
    ~0.3 ms: round(wanted − 0.3) lands within ±0.5 ms of the request.
    """
    if delay_ms <= 0:
        return 0
    return max(0, round(delay_ms - WIREFILTER_OVERHEAD_MS))


def wirefilter_rc(a_to_b: OneWay, b_to_a: OneWay) -> list[str]:
    """Management commands (one per line of an rc file) setting both directions."""
    lines: list[str] = []

    def delay(ow: OneWay) -> str:
        d = wirefilter_delay(ow.delay_ms)
        if ow.jitter_ms:
            return f"{d}+{round(ow.jitter_ms)}U"
        return f"{d}"

    lines += [f"delay LR{delay(a_to_b)}", f"delay RL{delay(b_to_a)}"]
    lines += [f"loss LR{a_to_b.loss_pct:g}", f"loss RL{b_to_a.loss_pct:g}"]

    def bw(ow: OneWay) -> str:  # bytes per second; 0 = unlimited
        return "0" if not ow.rate_mbit else f"{int(ow.rate_mbit * 1_000_000 / 8)}"

    lines += [f"bandwidth LR{bw(a_to_b)}", f"bandwidth RL{bw(b_to_a)}"]
    return lines


class WirefilterShaper:
    name = "wirefilter"

    def connect(self, link: Link, state: Any = None) -> None:
        link.kind = "wirefilter"
        d = link.sock_dir
        d.mkdir(parents=True, exist_ok=True)
        ends = (("a", link.ns_a, link.if_a), ("b", link.ns_b, link.if_b))
        for side, ns, ifname in ends:
            sock = d / f"sw{side}"
            pidf = d / f"sw{side}.pid"
            procs.run(["vde_switch", "-s", sock, "-t", ifname, "-d", "-p", pidf,
                       "-M", d / f"sw{side}.mgmt"], netns=ns)
            pid = _read_pid(pidf)
            link.pids[f"switch_{side}"] = pid
            procs.boost(pid)
            if state is not None:
                state.add_process(pid, f"vde_switch {link.a}-{link.b} {side}", ns)
        rc = d / "wirefilter.rc"
        rc.write_text("\n".join(wirefilter_rc(link.a_to_b, link.b_to_a)) + "\n")
        link.mgmt = str(d / "wf.mgmt")
        pidf = d / "wf.pid"
        # Runs inside namespace a (it only uses unix sockets): deleting the
        # namespace's processes on clean-up then catches it too.
        procs.run(["wirefilter", "-v", f"{d / 'swa'}:{d / 'swb'}", "-f", rc, "--daemon",
                   "--pidfile", pidf, "-M", link.mgmt], netns=link.ns_a)
        pid = _read_pid(pidf)
        link.pids["wirefilter"] = pid
        procs.boost(pid)
        if state is not None:
            state.add_process(pid, f"wirefilter {link.a}-{link.b}", link.ns_a)
        for _side, ns, ifname in ends:
            procs.wait_for(
                lambda ns=ns, ifname=ifname: procs.run(
                    ["ip", "link", "show", ifname], netns=ns, check=False).returncode == 0,
                10, f"TAP {ifname} in {ns}")

    def update(self, link: Link, a_to_b: OneWay, b_to_a: OneWay) -> None:
        if not link.mgmt:
            raise LabError(f"link {link.a}-{link.b} has no wirefilter to update")
        for line in wirefilter_rc(a_to_b, b_to_a):
            out = mgmt_command(link.mgmt, line)
            if "1000 Success" not in out:
                raise LabError(f"wirefilter {link.mgmt}: {line!r} → {out.strip()[-200:]}")
        link.a_to_b, link.b_to_a = a_to_b, b_to_a

    def info(self, link: Link) -> str:
        return mgmt_command(link.mgmt or "", "showinfo")


def mgmt_command(sock: str, line: str, timeout: float = 5.0) -> str:
    """Send one command to a VDE management socket; return its answer."""
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock)
        buf = b""
        # banner ends with the prompt "$ "
        end = time.monotonic() + timeout
        while not buf.rstrip().endswith(b"$") and time.monotonic() < end:
            buf += s.recv(4096)
        s.sendall(line.encode() + b"\n")
        out = b""
        while time.monotonic() < end:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
            # the answer ends with a status line "1000 Success" / "15xx error"
            if re.search(rb"(^|\n)[1-9]\d{3} [^\n]*\n", out):
                break
        return out.decode("utf-8", "replace")
    finally:
        with contextlib.suppress(OSError):
            s.sendall(b"logout\n")
        s.close()


def _read_pid(path: Path, timeout: float = 10.0) -> int:
    def get() -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int(Path(path).read_text().strip())
        return None

    return int(procs.wait_for(get, timeout, f"pid file {path}"))


def shaper_for(name: str) -> NetemShaper | WirefilterShaper | linkemu.LinkemuShaper:
    if name == "linkemu":
        return linkemu.LinkemuShaper()
    return NetemShaper() if name == "netem" else WirefilterShaper()


def connect(link: Link, shaper: str, state: Any = None, shapeable: bool = False) -> None:
    """Create ``link`` with ``shaper``; a link with nothing to shape is a plain veth pair
    unless ``shapeable`` (it will be shaped later: a deployment shared by trials)."""
    if link.a_to_b.is_noop and link.b_to_a.is_noop and not shapeable:
        _veth(link)
        link.kind = "veth"
        return
    shaper_for(shaper).connect(link, state)
