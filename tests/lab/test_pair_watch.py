"""Pairs of regions probed between themselves during the load (issue 46 item 5), on real namespaces and shaped
links: the runner's watch enters a region's namespace from a thread of its own and measures that region's link to
another — the shaped round trip, and a cut made on that pair while it watches — which the same probe from outside
the namespace does not cross; a namespace it cannot enter probes nothing rather than from the wrong place."""

from __future__ import annotations

import time

import pytest

from wanwide.core.plan.links import OneWay
from wanwide.pipeline.runner import netwatch
from wanwide.providers.lab import linkemu, netns, shaping

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("need_net")]
RTT_MS = 40.0
REGIONS = ["r1", "r2", "r3"]


@pytest.fixture(scope="module")
def net(leftovers):
    shaper = next((s for s, ok in (("netem", shaping.netem_available), ("linkemu", linkemu.available)) if ok()), None)
    if shaper is None:
        pytest.skip("no shaper on this machine")
    half = OneWay(delay_ms=RTT_MS / 2)
    n = netns.build(REGIONS, {(a, b): half for a in REGIONS for b in REGIONS if a != b}, shaper=shaper)
    yield n
    tag = n.tag
    n.destroy()
    assert leftovers(tag) == []


def _target(n: netns.Network, region: str) -> list[dict]:
    # port 9: closed, an RST answers in one round trip (the lab's network check probes the same way)
    return [{"region": region, "kind": "keystone", "host": n.address(region), "port": 9}]


@pytest.mark.timeout(120)
def test_a_pair_away_from_the_load_region_is_probed_from_inside_its_source(net: netns.Network) -> None:
    t0 = time.time()
    inside = netwatch.Watch("r2", _target(net, "r3"), 0.25, t0, timeout=1.0, netns=net.netns_path("r2"))
    outside = netwatch.Watch("r2", _target(net, "r3"), 0.25, t0, timeout=0.5)  # from the runner's own namespace
    with inside, outside:
        time.sleep(2.0)
        net.set_link("r2", "r3", OneWay(delay_ms=RTT_MS / 2, loss_pct=100))  # the pair cut while watched
        cut = time.time() - t0
        time.sleep(2.5)
    net.restore()
    (row,) = inside.rows()
    before = [ms for at, ms in row["samples"] if at < cut - 0.5]  # answered before the cut (probes take 40 ms)
    after = [ms for at, ms in row["samples"] if at > cut + 1.0]  # past the probes in flight at the cut
    assert len(before) >= 4 and all(ms is not None for ms in before), row["samples"]
    assert all(RTT_MS * 0.95 <= ms < RTT_MS + 200 for ms in before), before  # the shaped link, not loopback
    assert len(after) >= 1 and all(ms is None for ms in after), row["samples"]
    assert row["src"] == "r2" and row["dst"] == "r3" and "error" not in row
    # the same probe from outside the namespaces never crosses r2's link (no route: lost; the lab's host link:
    # unshaped) and never sees its cut: the answers above came through it
    (out,) = outside.rows()
    assert out["sent"] >= 3 and not any(ms is not None and ms >= RTT_MS * 0.95 for _, ms in out["samples"])
    assert not (out["lost"] and out["lost"] < out["sent"]), out["samples"]


def test_a_namespace_it_cannot_enter_probes_nothing() -> None:
    w = netwatch.Watch("r9", [{"region": "r1", "kind": "keystone", "host": "127.0.0.1", "port": 9}], 0.1,
                       time.time(), netns="/run/netns/ww-no-such-namespace")
    with w:
        time.sleep(0.5)
    (row,) = w.rows()
    assert row["sent"] == 0 and "cannot enter /run/netns/ww-no-such-namespace" in row["error"]
