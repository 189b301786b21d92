"""The runner's reading of its pod's netem qdiscs (``wanwide runner qdisc``, the Kubernetes provider's shaper
counters) on a real netem, in the VM (Debian's kernel; this host's has no netem): a network namespace shaped as
Chaos Mesh's chaos-daemon shapes a pod — a prio root, a netem qdisc under one band, a filter sending one
destination to it — then pinged; the counters the runner would record count those pings and netem's losses."""

from __future__ import annotations

import json
import sys

from wanwide.pipeline.runner import netwatch

from .helpers import ROOT, VmSh

SHAPE = """
set -e
ip netns add wwqa; ip netns add wwqb
trap 'ip netns del wwqa; ip netns del wwqb' EXIT
ip link add wwqa0 netns wwqa type veth peer name wwqb0 netns wwqb
ip -n wwqa addr add 10.99.0.1/24 dev wwqa0; ip -n wwqa link set wwqa0 up
ip -n wwqb addr add 10.99.0.2/24 dev wwqb0; ip -n wwqb link set wwqb0 up
tc -n wwqa qdisc add dev wwqa0 root handle 1: prio bands 4
tc -n wwqa qdisc add dev wwqa0 parent 1:4 handle 2: netem loss 20%
tc -n wwqa filter add dev wwqa0 parent 1: protocol ip prio 1 u32 match ip dst 10.99.0.2/32 flowid 1:4
ip netns exec wwqa ping -c 3 -W 1 -q 10.99.0.2 >/dev/null || true  # neighbours resolved before the reading
echo "BEFORE $(ip netns exec wwqa env PYTHONPATH={root}/operator {py} -m wanwide.pipeline.runner.cli qdisc r1)"
ip netns exec wwqa ping -c 300 -i 0.01 -W 1 -q 10.99.0.2 >/dev/null || true
echo "AFTER $(ip netns exec wwqa env PYTHONPATH={root}/operator {py} -m wanwide.pipeline.runner.cli qdisc r1)"
"""


def test_the_runner_reads_a_pods_netem_counters_on_real_netem(vmsh: VmSh, vm: str) -> None:
    r = vmsh("exec", vm, "--", "sh", "-c", SHAPE.format(root=ROOT, py=sys.executable), timeout=600)
    said = {ln.split(" ", 1)[0]: json.loads(ln.split(" ", 1)[1]) for ln in r.stdout.splitlines()
            if ln.startswith(("BEFORE ", "AFTER "))}
    assert set(said) == {"BEFORE", "AFTER"}, r.stdout[-2000:] + r.stderr[-2000:]
    key = "r1→* (wwqa0 2:)"
    assert set(said["AFTER"]) == {key}, said  # the netem qdisc under the prio band, nothing else
    q = said["AFTER"][key]
    assert q["kind"] == "netem" and q["parent"] == "1:4" and abs(q["options"]["loss-random"]["loss"] - 0.2) < 1e-3, q
    grew = netwatch.counters_delta(said["BEFORE"], said["AFTER"])[key]
    # 300 echo requests through netem: 20 % dropped by it (binomial: 60 ± 7; ±3.5 sd), the rest sent
    assert 290 <= grew["packets"] + grew["drops"] <= 310, grew
    assert 35 <= grew["drops"] <= 85, grew
