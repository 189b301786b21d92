"""Pure parts of the lab: shaper arguments, Galera timeouts (no root needed)."""

from __future__ import annotations

from wanwide.core.plan.links import OneWay
from wanwide.core.plan.services import galera_wan_options as galera_provider_options
from wanwide.providers.lab import linkemu, shaping


def test_netem_args() -> None:
    assert shaping.netem_args(OneWay(25, 2, 1.5, 100)) == [
        "netem", "limit", "100000", "delay", "25ms", "2ms", "loss", "1.5%", "rate", "100mbit"]
    assert shaping.netem_args(OneWay(0, 0, 10)) == ["netem", "limit", "100000", "loss", "10%"]


def test_wirefilter_rc_per_direction() -> None:
    rc = shaping.wirefilter_rc(OneWay(25, 2, 1.5, 100), OneWay(40))
    assert rc == ["delay LR25+2U", "delay RL40", "loss LR1.5", "loss RL0",
                  "bandwidth LR12500000", "bandwidth RL0"]


def test_wirefilter_delay_compensates_whole_ms() -> None:
    assert shaping.wirefilter_delay(0) == 0
    assert shaping.wirefilter_delay(0.2) == 0
    assert shaping.wirefilter_delay(25) == 25
    assert shaping.wirefilter_delay(12.5) == 12
    assert shaping.wirefilter_delay(10.9) == 11


def test_galera_wan_options_scale_with_rtt() -> None:
    lan = galera_provider_options(0)
    assert lan["evs.suspect_timeout"] == "PT5S"
    assert lan["evs.inactive_timeout"] == "PT15S"
    assert lan["evs.send_window"] == "512" and lan["evs.user_send_window"] == "256"  # at every RTT (issue 46)
    assert {k: v for k, v in galera_provider_options(150).items() if "send_window" in k} == \
        {k: v for k, v in lan.items() if "send_window" in k}
    wan = galera_provider_options(300)
    assert wan["evs.suspect_timeout"] == "PT9S"
    assert wan["evs.inactive_timeout"] == "PT18S"
    assert int(wan["evs.user_send_window"]) < int(wan["evs.send_window"])
    for k in ("evs.suspect_timeout", "evs.inactive_timeout", "gmcast.peer_timeout"):
        assert float(wan[k][2:-1]) >= float(lan[k][2:-1])


def test_galera_timeouts_grow_with_the_members_beyond_ten() -> None:
    """A 45-member cluster on 2 cores: a joiner's 30 s wait for a primary view ran out with 35 members up."""
    assert galera_provider_options(0, 9) == galera_provider_options(0, 3) == galera_provider_options(0)
    big = galera_provider_options(0, 45)
    assert (big["pc.wait_prim_timeout"], big["evs.install_timeout"], big["evs.inactive_timeout"],
            big["evs.suspect_timeout"], big["gmcast.peer_timeout"]) == ("PT135S", "PT67.5S", "PT67.5S", "PT31.5S", "PT22.5S")
    # the gossip slows down: keepalives every (n/15)² s (each round costs every member frames growing faster
    # than n²), join retransmissions every 3 s, inactivity checked every 1.5 s
    assert (big["evs.keepalive_period"], big["evs.join_retrans_period"], big["evs.inactive_check_period"]) == \
        ("PT9S", "PT3S", "PT1.5S")
    s = lambda k, o=big: float(o[k][2:-1])  # noqa: E731
    for n in range(11, 61):  # Galera refuses a keepalive period not below a third of the suspicion timeout
        o = galera_provider_options(0, n)
        assert s("evs.keepalive_period", o) < s("evs.suspect_timeout", o) / 3, (n, o)
        assert s("gmcast.peer_timeout", o) > 2 * s("evs.keepalive_period", o), (n, o)
    assert "evs.inactive_check_period" not in galera_provider_options(0, 10)
    # Galera's order: keepalive < suspect < inactive
    assert s("evs.inactive_check_period") < s("evs.keepalive_period") < s("evs.suspect_timeout") < s("evs.inactive_timeout")
    assert galera_provider_options(300, 45)["pc.wait_prim_timeout"] == "PT135S"  # 100 RTT = 30 s: members win


def test_linkemu_direction_args_units() -> None:
    """The emulator takes µs, ppm and bit/s: 12.5 ms ± 0.25 ms, 0.1 % loss, 2.5 Mbit/s; no rate is 0 (none)."""
    assert linkemu.direction_args(OneWay(12.5, jitter_ms=0.25, loss_pct=0.1, rate_mbit=2.5)) == [
        12500, 250, 1000, 2_500_000, linkemu.QUEUE_LIMIT]
    assert linkemu.direction_args(OneWay()) == [0, 0, 0, 0, linkemu.QUEUE_LIMIT]
    assert linkemu.direction_args(OneWay(loss_pct=100))[2] == 1_000_000


def test_netem_counters_from_tc_json() -> None:
    """``tc -s -j qdisc show dev X``'s form (iproute2 6.x): the root netem qdisc's counters, gauges too; none
    without a netem qdisc. Not read from a live netem here: this kernel has none (docs/lab-internals.md)."""
    from wanwide.providers.lab.counters import netem_counters

    tc = [{"kind": "netem", "handle": "8001:", "root": True, "refcnt": 2,
           "options": {"limit": 100000, "delay": {"delay": 0.025, "jitter": 0, "correlation": 0}},
           "bytes": 123456, "packets": 1000, "drops": 12, "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0}]
    assert netem_counters(tc) == {"packets": 1000, "bytes": 123456, "drops": 12, "overlimits": 0, "requeues": 0,
                                  "backlog": 0, "qlen": 0}
    assert netem_counters([{"kind": "noqueue", "handle": "0:", "root": True}]) is None
