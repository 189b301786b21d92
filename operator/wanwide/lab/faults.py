"""The plan's fault timeline played on the lab's links, timed from the load start."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ..plan.faults import FaultWindow, occurrences
from ..plan.links import OneWay, Pair
from ..plan.trial import TrialPlan
from .netns import Network


@dataclass(frozen=True)
class Event:
    at_s: float  # from the load start
    begins: bool  # the window begins (else it ends)
    window: FaultWindow


def events(plan: TrialPlan, until_s: float) -> list[Event]:
    """Every begin and end of every fault window before ``until_s``, in time order (ends first on ties)."""
    out = []
    for w in plan.faults:
        for start, end in occurrences(w, until_s):
            out += [Event(start, True, w), Event(end, False, w)]
    return sorted(out, key=lambda e: (e.at_s, e.begins))


def shaping(plan: TrialPlan, active: list[FaultWindow], pair: Pair) -> OneWay:
    """A link's shaping with ``active`` windows in force: the lossiest window wins, else the plan's."""
    during = [w.links[pair] for w in active if pair in w.links]
    return max(during, key=lambda o: o.loss_pct) if during else plan.links[pair]


class FaultPlayer(threading.Thread):
    """Plays :func:`events` on ``net`` from ``start`` (epoch seconds) until stopped."""

    def __init__(self, net: Network, plan: TrialPlan, start: float, until_s: float):
        super().__init__(daemon=True)
        self.net, self.plan, self.start_at = net, plan, start
        self.schedule = events(plan, until_s)
        self.stop_flag = threading.Event()
        self.log: list[dict[str, Any]] = []

    def _apply(self, e: Event, active: list[FaultWindow]) -> None:
        if e.begins:
            active.append(e.window)
        else:
            active.remove(e.window)
        for pair in e.window.links:
            self.net.set_link(*pair, shaping(self.plan, active, pair))
        self.log.append({"at_s": e.at_s, "event": "begin" if e.begins else "end", "fault": e.window.name,
                         "regions": list(e.window.regions), "extra_loss_pct": e.window.extra_loss_pct})

    def run(self) -> None:
        active: list[FaultWindow] = []
        for e in self.schedule:
            if self.stop_flag.wait(max(0.0, self.start_at + e.at_s - time.time())):
                return
            self._apply(e, active)
