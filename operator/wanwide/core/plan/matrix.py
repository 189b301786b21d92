"""Matrix expansion: a Benchmark's sweep → one parameter point per trial, and the run order."""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field

from wanwide.core.api.benchmark import BenchmarkSpec

# Axis order decides trial indices: the slowest-changing axis first.
AXES = ("backend", "regions", "rtt", "intra_group_rtt", "inter_group_rtt", "loss", "load", "load_region", "scenario")
@dataclass(frozen=True)
class Point:
    """One trial's parameters (None = not swept, take the spec's value) and its place in the run order."""

    index: int
    repetition: int
    values: dict[str, object] = field(default_factory=dict)
    position: int | None = None  # when it runs among the Benchmark's trials (None: at its index)
    seed: int | None = None  # the seed the order was drawn with

    def get(self, axis: str, default: object = None) -> object:
        v = self.values.get(axis)
        return default if v is None else v


def swept_axes(spec: BenchmarkSpec) -> list[str]:
    return [a for a in AXES if getattr(spec.matrix, a) is not None]


def order_seed(spec: BenchmarkSpec, name: str) -> int:
    """``spec.matrix.seed``, else one derived from the Benchmark's name (the same on every run)."""
    if spec.matrix.seed is not None:
        return spec.matrix.seed
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") & 0x7FFFFFFF


def run_order(n_points: int, repetitions: int, order: str, seed: int) -> list[int]:
    """Indices (point × repetitions + repetition) in the order the trials run.

    ``Sequential``: by index (each point's repetitions one after the other). ``Interleaved``:
    in rounds — round r runs repetition r of every point — each round in its own random
    order drawn from ``seed``, so no parameter value always runs first on a fresh deployment
    and slow drifts of the machine spread over every point.
    """
    if order == "Sequential":
        return list(range(n_points * repetitions))
    rng = random.Random(seed)
    out: list[int] = []
    for rep in range(repetitions):
        points = list(range(n_points))
        rng.shuffle(points)
        out += [p * repetitions + rep for p in points]
    return out


def expand(spec: BenchmarkSpec, name: str = "") -> list[Point]:
    """Every (point × repetition), repetitions innermost, indices from 0, each with its position
    in the run order (:func:`run_order`) and the seed it was drawn with."""
    axes = swept_axes(spec)
    values = [list(getattr(spec.matrix, a)) for a in axes]
    combos = list(itertools.product(*values)) if axes else [()]
    reps = spec.matrix.repetitions
    seed = order_seed(spec, name)
    position = {idx: pos for pos, idx in enumerate(run_order(len(combos), reps, spec.matrix.order, seed))}
    points: list[Point] = []
    for combo in combos:
        for rep in range(reps):
            i = len(points)
            points.append(Point(i, rep, dict(zip(axes, combo, strict=True)), position[i], seed))
    return points
