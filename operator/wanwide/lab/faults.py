"""The lifecycle's fault schedule played on the lab's links, timed from the load start."""

from __future__ import annotations

import threading
import time
from typing import Any

from ..plan.lifecycle import FaultEvent, fault_events, in_force, wan_at
from ..plan.trial import TrialPlan
from .netns import Network


class FaultPlayer(threading.Thread):
    """At each begin and end of a fault window (plan/lifecycle.py), sets the links that window touches to
    the WAN then in force; from ``start`` (epoch seconds) until stopped."""

    def __init__(self, net: Network, plan: TrialPlan, start: float, until_s: float):
        super().__init__(daemon=True)
        self.net, self.plan, self.start_at = net, plan, start
        self.schedule = fault_events(plan.faults, until_s)
        self.stop_flag = threading.Event()
        self.log: list[dict[str, Any]] = []

    def apply(self, e: FaultEvent) -> None:
        wan = wan_at(self.plan, in_force(self.plan.faults, e.at_s))
        for pair in e.window.links:
            self.net.set_link(*pair, wan.effective(pair))
        self.log.append({"at_s": e.at_s, "event": "begin" if e.begins else "end", "fault": e.name,
                         "regions": list(e.window.regions), "extra_loss_pct": e.window.extra_loss_pct})

    def run(self) -> None:
        for e in self.schedule:
            if self.stop_flag.wait(max(0.0, self.start_at + e.at_s - time.time())):
                return
            self.apply(e)
