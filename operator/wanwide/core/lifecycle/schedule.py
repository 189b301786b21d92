"""The fault schedule: every begin and end of every fault window, which are in force at an instant, the WAN then.

Offsets count from the load start (a dropout cuts every ``every``, for ``for``). Windows may overlap;
they do not add up: on each directed link the lossiest loss window in force applies (its whole
shaping: the link's own plus its extra loss), and a cut (a partition or a dropout) beats any loss.
Both providers shape exactly :func:`wan_in_force` at every instant. A retried load replays the whole
schedule from its own start: the WAN is a function of the time since the load start, so nothing of a
failed attempt's faults survives it.
"""

from __future__ import annotations

from dataclasses import dataclass

from wanwide.core.plan.faults import FaultWindow, next_change, occurrence_at, occurrences
from wanwide.core.plan.links import LinkMap, OneWay, Pair
from wanwide.core.plan.trial import TrialPlan

CUT = "partition", "dropout"  # the kinds that cut links off (everything lost, both ways)


@dataclass(frozen=True)
class FaultEvent:
    """A fault window's ``occurrence`` (0 for a one-off window; the k-th cut of a dropout) begins or ends."""

    at_s: float  # from the load start
    begins: bool
    window: FaultWindow
    occurrence: int = 0

    @property
    def name(self) -> str:
        """The occurrence's name: ``loss0``, ``partition1``, ``dropout0-3``."""
        return self.window.name + (f"-{self.occurrence}" if self.window.every_s is not None else "")


@dataclass(frozen=True)
class Active:
    """A fault window's occurrence in force: ``[start_s, end_s)`` from the load start."""

    window: FaultWindow
    occurrence: int
    start_s: float
    end_s: float

    @property
    def name(self) -> str:
        return self.window.name + (f"-{self.occurrence}" if self.window.every_s is not None else "")


def fault_events(faults: list[FaultWindow], until_s: float) -> list[FaultEvent]:
    """Every begin and end before ``until_s`` of every window, in time order (an end before a begin at the
    same instant: a window that ends as another starts never overlaps it)."""
    out = []
    for w in faults:
        for k, (start, end) in enumerate(occurrences(w, until_s)):
            out += [FaultEvent(start, True, w, k), FaultEvent(end, False, w, k)]
    return sorted(out, key=lambda e: (e.at_s, e.begins))


def in_force(faults: list[FaultWindow], t_s: float) -> tuple[Active, ...]:
    """The windows' occurrences in force ``t_s`` seconds after the load start (in ``faults`` order); computed,
    not enumerated (core/plan/faults.py ``occurrence_at``)."""
    return tuple(Active(w, *occ) for w in faults if (occ := occurrence_at(w, t_s)) is not None)


def next_change_s(faults: list[FaultWindow], t_s: float) -> float | None:
    """When (from the load start) the next window begins or ends after ``t_s``; None: never."""
    upcoming = [x for w in faults if (x := next_change(w, t_s)) is not None]
    return min(upcoming) if upcoming else None


@dataclass(frozen=True)
class Wan:
    """The WAN in force at an instant: each directed link's shaping, and the links cut off."""

    links: LinkMap  # the plan's links with the loss windows in force (cuts not applied)
    cut: frozenset[Pair] = frozenset()
    cut_by: tuple[Active, ...] = ()  # the cutting windows in force (partitions, dropouts)

    def effective(self, pair: Pair) -> OneWay:
        """What traffic on ``pair`` meets: a cut link loses everything (its delay and rate kept)."""
        s = self.links[pair]
        return OneWay(s.delay_ms, s.jitter_ms, 100.0, s.rate_mbit) if pair in self.cut else s


def wan_at(plan: TrialPlan, active: tuple[Active, ...]) -> Wan:
    """The WAN with ``active`` windows in force (the overlap rule: see the module's docstring)."""
    links = dict(plan.links)
    lossiest: dict[Pair, OneWay] = {}
    cut: set[Pair] = set()
    for a in active:
        if a.window.kind in CUT:
            cut |= set(a.window.links)
            continue
        for pair, s in a.window.links.items():
            if pair not in lossiest or s.loss_pct > lossiest[pair].loss_pct:
                lossiest[pair] = s
    links.update(lossiest)
    return Wan(links, frozenset(cut), tuple(a for a in active if a.window.kind in CUT))


def wan_in_force(plan: TrialPlan, elapsed_s: float | None) -> Wan:
    """The WAN ``elapsed_s`` after the load start (None: not loading: the plan's own)."""
    return wan_at(plan, in_force(plan.faults, elapsed_s) if elapsed_s is not None else ())


def needs_shaping(plan: TrialPlan) -> bool:
    """Whether the plan shapes any link or injects any fault (else there is nothing to put in force)."""
    return any(plan.classes.values()) or bool(plan.faults)


__all__ = ["CUT", "Active", "FaultEvent", "Wan", "fault_events", "in_force", "needs_shaping", "next_change_s",
           "wan_at", "wan_in_force"]
