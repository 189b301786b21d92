"""CI-sized docs/emulation.md: inside a VM with Debian's kernel, the lab's netem shaper and linkemu each
give a reduced set of link shapes within the VM's tolerance, measured by bench/emulation.py as the
full comparison measures them.

The tolerance is the VM's, not the lab's max(1 ms, 5 %): under TCG on a busy 2-core host the guest's
timers and its scheduling add milliseconds to any path (docs/emulation.md's noise floor: even netem's
median at 10 ms RTT read 15.6 ms at host load 14), so the delay is checked at 100 ms RTT against
max(5 ms, 10 %) beyond the same path's latency with nothing set (at host load 20 that floor read 15 ms
through linkemu), and nothing may come back faster than requested; loss against ±2 points at 10 % over
up to 10,000 datagrams (at least 5,000: the sampling error is then 0.4 points); rate at 1 Mbit/s
(linkemu, a user-space process, does not reach 10 Mbit/s in this VM: ibid.). A shaper that does not
apply a shape, or applies another, fails them (wirefilter in the same VM misses the loss and the delay).
"""

from __future__ import annotations

import json
import statistics
import sys

import pytest

from .helpers import ROOT, VmSh

SHAPES = "none,rtt100,loss10,rate1,partition"
GOODPUT = 1448 / 1514


def measure(vmsh: VmSh, vm: str, shaper: str) -> dict[str, dict]:
    r = vmsh("exec", vm, "--", "env", f"PYTHONPATH={ROOT / 'operator'}", sys.executable, "bench/emulation.py",
             "measure", "--shaper", shaper, "--only", SHAPES, "--pings", "100", "--udp-packets", "10000",
             "--tcp-seconds", "6", timeout=1500)
    out = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("{"):
            rec = json.loads(ln)
            out[rec["shape"]] = rec
    assert set(out) == set(SHAPES.split(",")), (sorted(out), r.stderr[-2000:])
    return out


@pytest.mark.parametrize("shaper", ["netem", "linkemu"])
def test_shaper_meets_each_request_in_the_vm(vmsh: VmSh, vm: str, shaper: str) -> None:
    got = measure(vmsh, vm, shaper)
    assert {r["link_kind"] for r in got.values()} == {shaper}  # the lab's shaper built the link, not a veth
    if shaper == "netem":  # netem's own counters saw the loss it made
        assert "qdisc netem" in got["loss10"]["counters_after"]["tc_a"]
    floor = statistics.median(got["none"]["ping_ms"])  # the same path with nothing set: the VM's own latency
    pings = got["rtt100"]["ping_ms"]
    rtt = statistics.median(pings)
    probe = statistics.median(got["rtt100"]["tcp_ms"])
    assert len(pings) >= 95
    assert min(pings) >= 99, pings  # nothing comes back before the requested delay
    assert abs(rtt - floor - 100) <= 10, (rtt, floor, probe)  # the delay added beyond the VM's own
    lost, sent = got["loss10"]["udp_lost"], got["loss10"]["udp_sent"]
    assert sent >= 5000 and 8.0 <= 100 * lost / sent <= 12.0, (lost, sent)  # the sender may fall behind: the share counts
    wire = got["rate1"]["goodput_bps"] / GOODPUT / 1e6
    assert 0.90 <= wire <= 1.05, wire
    assert got["partition"]["ping_through"] == 0
    # traffic is back within 1 s of the shaper having lifted the cut (lifting takes netem's tc processes seconds
    # under TCG: reported, not judged)
    assert got["partition"]["resume_after_lift_ms"] is not None and got["partition"]["resume_after_lift_ms"] < 1000
    print(json.dumps({"shaper": shaper, "floor_ms": floor, "rtt100_ping_ms": rtt, "rtt100_probe_ms": probe,
                      "loss10_pct": 100 * lost / sent, "rate1_wire_mbit": wire,
                      "lift_ms": got["partition"]["lift_ms"],
                      "resume_after_lift_ms": got["partition"]["resume_after_lift_ms"]}))
