"""The operator's helm slots go to the releases that waited longest (no trial starves behind others)."""

from __future__ import annotations

from wanwide.kube.helm import Background
from wanwide.render.keystone import HelmRelease


def _rel(ns: str) -> HelmRelease:
    return HelmRelease("keystone", ns, "r1", "", "chart", "0.1.0", {}, 0)


def test_free_slots_go_to_the_longest_waiting_release():
    bg = Background(max_running=2)
    a, b, c = _rel("a"), _rel("b"), _rel("c")
    assert bg.my_turn(a, now=0) and bg.my_turn(b, now=1) and not bg.my_turn(c, now=2)
    # c asks far more often than a and b: it still waits its turn
    for t in range(3, 30):
        assert not bg.my_turn(c, now=t)
    assert bg.my_turn(a, now=30) and bg.my_turn(b, now=30)
    bg.served(a)  # a started (or was found installed): c is among the two oldest now
    assert bg.my_turn(c, now=31)


def test_a_release_nobody_asks_about_any_more_stops_holding_its_place():
    bg = Background(max_running=1)
    gone, c = _rel("gone"), _rel("c")
    assert bg.my_turn(gone, now=0) and not bg.my_turn(c, now=1)
    assert bg.my_turn(c, now=1 + Background.STALE_S)  # the trial of "gone" was deleted
