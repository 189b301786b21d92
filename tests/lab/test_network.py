"""Real namespaces and shaped links on this machine, with each shaper it has (here: linkemu and wirefilter; no netem:
in a VM with Debian's kernel, hack/vm.sh test -- -m lab tests/lab/test_network.py, all three)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import textwrap

import pytest

from wanwide.core.plan.links import OneWay
from wanwide.providers.lab import linkemu, netns, shaping
from wanwide.providers.lab.state import cleanup_all

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("need_net")]

# Requested RTTs: r1-r2 0 ms, r1-r3 50 ms (asymmetric: 10 ms out, 40 ms back),
# r2-r3 100 ms.
LINKS = {
    ("r1", "r2"): OneWay(0), ("r2", "r1"): OneWay(0),
    ("r1", "r3"): OneWay(10), ("r3", "r1"): OneWay(40),
    ("r2", "r3"): OneWay(50), ("r3", "r2"): OneWay(50),
}
RTT = {("r1", "r2"): 0.0, ("r1", "r3"): 50.0, ("r2", "r3"): 100.0}


def tolerance(ms: float) -> float:
    return max(1.0, 0.05 * ms)


# wirefilter (VDE) misses the lab's bound on the machine of 2026-11-28 even when quiet (steal ~2 %): one way at
# 10 ms off by 1.3-2.6 ms, RTT off by 3.5-4.0 ms (bound 2.5), in 5 of 9 runs; linkemu, the lab's shaper where
# the kernel has no netem, within bound in every run. Its precision cases still run and report XPASS/XFAIL.
WIREFILTER_IMPRECISE = ("wirefilter's path adds 1-3 ms of its own on this machine (measured 2026-11-28, "
                        "docs/verification.md); the lab shapes with linkemu here")


# Inside a VM under qemu's software emulation (TCG: hack/vm.sh where KVM does not run Linux), the lab's probe
# is Python on an emulated CPU: it read 1.06-4.0 ms at the median over a region's own loopback and 1.49 ms over
# an unshaped veth (2026-11-29, host load 8-10, docs/verification.md issue 48): more than the 1 ms bound on any
# path, whatever the shaper. Its precision cases still run there and report XPASS/XFAIL.
TCG_IMPRECISE = ("under qemu's TCG the probe's own floor exceeds 1 ms even over loopback (measured 2026-11-29, "
                 "docs/verification.md issue 48)")


def _emulated_cpu() -> bool:
    """True inside a VM whose CPU is qemu's software emulation (its model name says so)."""
    try:
        with open("/proc/cpuinfo") as f:
            return "QEMU TCG CPU" in f.read()
    except OSError:
        return False


def _precision_case(request, net: netns.Network | None = None) -> None:
    if net is not None and net.describe()["shaper"] == "wirefilter":
        request.applymarker(pytest.mark.xfail(reason=WIREFILTER_IMPRECISE, strict=False))
    elif _emulated_cpu():
        request.applymarker(pytest.mark.xfail(reason=TCG_IMPRECISE, strict=False))


USABLE = {"netem": shaping.netem_available, "linkemu": linkemu.available, "wirefilter": shaping.wirefilter_available}


@pytest.fixture(scope="module", params=shaping.SHAPERS)
def net3(request, leftovers):
    if not USABLE[request.param]():  # asked here, not at collection (netem's probe makes a namespace)
        pytest.skip(f"shaper {request.param} not on this machine")
    net = netns.build(["r1", "r2", "r3"], LINKS, shaper=request.param)
    yield net
    tag = net.tag
    net.destroy()
    assert leftovers(tag) == []


def within(measure, want: float, tol: float) -> tuple[float, list[list[float]]]:
    """Median of ``measure()`` against ``want``, measured once more when off.

    The same rule as the lifecycle's network check (``core/lifecycle.verdict``):
    on a virtual machine, steal time delays the user-space shaper now and
    then, and one hiccup is not the network. Returns the last median and
    every sample set for the assertion message.
    """
    seen = []
    for _ in range(2):
        s = measure()
        seen.append(s)
        med = statistics.median(s) if s else float("nan")
        if abs(med - want) <= tol:
            break
    return med, seen


@pytest.mark.timeout(180)
def test_rtt_matches_request(net3: netns.Network, request) -> None:
    _precision_case(request, net3)
    got = {}
    for (a, b), want in RTT.items():
        for src, dst in ((a, b), (b, a)):
            med, seen = within(lambda s=src, d=dst: net3.measure_rtt(s, d, samples=15), want, tolerance(want))
            assert len(seen[-1]) >= 14, (src, dst, seen)
            got[(src, dst)] = med
            assert abs(med - want) <= tolerance(want), (src, dst, want, seen)
    print(json.dumps({f"{a}->{b}": round(v, 2) for (a, b), v in got.items()}))


@pytest.mark.timeout(60)
def test_intra_region_unshaped(net3: netns.Network, request) -> None:
    _precision_case(request)
    for r in ("r1", "r3"):
        s = net3.measure_rtt(r, r, samples=10)
        assert statistics.median(s) < 1.0, s


def one_way(net: netns.Network, src: str, dst: str, n: int = 20) -> list[float]:
    """One-way delays src→dst of ``n`` UDP datagrams stamped with the (shared) clock."""
    rx = net.popen_in(dst, [*netns.rt_prefix(), sys.executable, "-c", _UDP_RX, net.address(dst), str(n)],
                      stdout=subprocess.PIPE, text=True)
    assert rx.stdout is not None
    assert rx.stdout.readline().strip() == "ready"  # bound: no datagram is sent before (a slow start, e.g. in a VM)
    net.exec_in(src, [*netns.rt_prefix(), sys.executable, "-c", _UDP_TX, net.address(dst), str(n)])
    out, _ = rx.communicate(timeout=20)
    return json.loads(out)


@pytest.mark.timeout(120)
def test_one_way_delays_per_direction(net3: netns.Network, request) -> None:
    """r1→r3 10 ms and r3→r1 40 ms: each direction gets its own delay."""
    _precision_case(request, net3)
    out, seen = within(lambda: one_way(net3, "r1", "r3"), 10, 1.0)
    assert len(seen[-1]) >= 18, seen
    assert abs(out - 10) <= 1.0, seen
    back, seen = within(lambda: one_way(net3, "r3", "r1"), 40, 2.0)
    assert len(seen[-1]) >= 18, seen
    assert abs(back - 40) <= 2.0, seen


@pytest.mark.timeout(90)
def test_loss_is_measurable(net3: netns.Network) -> None:
    """10 % loss set on the live r2→r3 direction shows as ~10 % lost pings."""
    net3.set_link("r2", "r3", OneWay(50, loss_pct=10))
    try:
        n = 300
        s = net3.measure_rtt("r2", "r3", samples=n, method="ping", interval=0.01, timeout=1)
        lost = 1 - len(s) / n
        assert 0.04 <= lost <= 0.18, lost
    finally:
        net3.set_link("r2", "r3", OneWay(50))


def test_describe_records_shaper(net3: netns.Network) -> None:
    d = net3.describe()
    assert d["shaper"] in shaping.SHAPERS
    assert len(d["links"]) == 3
    assert {lk["kind"] for lk in d["links"]} == {"veth", d["shaper"]}
    assert d["regions"]["r2"]["address"] == net3.address("r2")


@pytest.mark.timeout(60)
def test_host_reaches_regions(net3: netns.Network) -> None:
    r = net3.exec_in("r2", ["ping", "-c", "1", "-W", "2", netns.HOST_ADDRESS], check=False)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_cleanup_after_killed_builder(how: str, lab_state_dir, leftovers) -> None:
    """A builder killed with SIGKILL leaves a state file that cleanup_all undoes;
    one given SIGTERM undoes its own network."""
    tag = "k" + how[3].lower() + secrets.token_hex(2)
    code = textwrap.dedent(f"""
        import time
        from wanwide.providers.lab import netns
        from wanwide.core.plan.links import OneWay
        links = {{("a", "b"): OneWay(5), ("b", "a"): OneWay(5)}}
        net = netns.build(["a", "b", "c"], links, tag={tag!r})
        print("ready", flush=True)
        time.sleep(600)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "WANWIDE_LAB_STATE_DIR": str(lab_state_dir)})
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "ready"
    assert leftovers(tag), "nothing built?"
    p.send_signal(getattr(signal, how))
    p.wait(timeout=60)
    if how == "SIGKILL":
        assert leftovers(tag)
        assert (lab_state_dir / f"{tag}.json").exists()
        notes = cleanup_all(lab_state_dir)
        assert any(tag in n for n in notes), notes
    assert leftovers(tag) == []
    assert not (lab_state_dir / f"{tag}.json").exists()


_UDP_RX = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9999)); s.settimeout(5)
print("ready", flush=True)
out = []
try:
    for _ in range(int(sys.argv[2])):
        d, _ = s.recvfrom(100)
        out.append((time.time() - float(d)) * 1000)
except socket.timeout:
    pass
print(json.dumps(out))
"""
_UDP_TX = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[2])):
    s.sendto(repr(time.time()).encode(), (sys.argv[1], 9999)); time.sleep(0.03)
"""
