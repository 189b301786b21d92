"""Matrix expansion: a Benchmark's sweep → one parameter point per trial."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..api.benchmark import BenchmarkSpec

# Axis order decides trial order: the slowest-changing axis first.
AXES = ("backend", "regions", "rtt", "intra_group_rtt", "inter_group_rtt", "loss", "load", "scenario")
WIRE = {
    "backend": "backend",
    "regions": "regions",
    "rtt": "rtt",
    "intra_group_rtt": "intraGroupRtt",
    "inter_group_rtt": "interGroupRtt",
    "loss": "loss",
    "load": "load",
    "scenario": "scenario",
}


@dataclass(frozen=True)
class Point:
    """One trial's parameters (None = not swept, take the spec's value)."""

    index: int
    repetition: int
    values: dict[str, object] = field(default_factory=dict)

    def get(self, axis: str, default: object = None) -> object:
        v = self.values.get(axis)
        return default if v is None else v


def swept_axes(spec: BenchmarkSpec) -> list[str]:
    return [a for a in AXES if getattr(spec.matrix, a) is not None]


def expand(spec: BenchmarkSpec) -> list[Point]:
    """Every (point × repetition), repetitions innermost, indices from 0."""
    axes = swept_axes(spec)
    values = [list(getattr(spec.matrix, a)) for a in axes]
    points: list[Point] = []
    for combo in itertools.product(*values) if axes else [()]:
        for rep in range(spec.matrix.repetitions):
            points.append(Point(len(points), rep, dict(zip(axes, combo, strict=True))))
    return points

