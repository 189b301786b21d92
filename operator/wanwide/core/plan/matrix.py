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


def run_order(n_points: int, repetitions: int, order: str, seed: int, first: int = 0) -> list[int]:
    """Indices (``n_points`` × ``first`` + point × repetitions + repetition − ``first``) in the order the trials
    run; ``first``: the rounds a campaign already ran (``matrix.firstRepetition``), whose indices come before.

    ``Sequential``: by index (each point's repetitions one after the other). ``Interleaved``:
    in rounds — round r runs repetition r of every point — each round in its own random
    order drawn from ``seed``, so no parameter value always runs first on a fresh deployment
    and slow drifts of the machine spread over every point. Rounds added later (``first`` > 0)
    continue the seed's stream: round r gets the order it would have had in one longer campaign.
    """
    base = n_points * first
    if order == "Sequential":
        return list(range(base, base + n_points * repetitions))
    rng = random.Random(seed)
    out: list[int] = []
    for rnd in range(first + repetitions):
        points = list(range(n_points))
        rng.shuffle(points)
        if rnd >= first:
            out += [base + p * repetitions + rnd - first for p in points]
    return out


def expand(spec: BenchmarkSpec, name: str = "") -> list[Point]:
    """Every (point × repetition), repetitions innermost, indices from ``n_points × firstRepetition`` (0 for a
    campaign's first Benchmark), each with its position in the run order (:func:`run_order`) and the seed it
    was drawn with."""
    axes = swept_axes(spec)
    values = [list(getattr(spec.matrix, a)) for a in axes]
    combos = list(itertools.product(*values)) if axes else [()]
    reps, first = spec.matrix.repetitions, spec.matrix.first_repetition
    seed = order_seed(spec, name)
    order = run_order(len(combos), reps, spec.matrix.order, seed, first)
    position = {idx: pos for pos, idx in enumerate(order)}
    base = len(combos) * first
    points: list[Point] = []
    for combo in combos:
        for rep in range(reps):
            i = base + len(points)
            points.append(Point(i, first + rep, dict(zip(axes, combo, strict=True)), position[i], seed))
    return points


def campaign_rounds(specs: list[BenchmarkSpec]) -> int:
    """The rounds a campaign of these Benchmarks has: the most any of them runs (firstRepetition + repetitions)."""
    return max((s.matrix.first_repetition + s.matrix.repetitions for s in specs), default=0)


def with_more_rounds(specs: list[BenchmarkSpec], n: int, after: int = 0) -> list[BenchmarkSpec]:
    """Every Benchmark of a campaign running ``n`` rounds after the campaign's own and ``after`` rounds added
    before (:func:`more_rounds`, one ``first`` for all: :func:`campaign_rounds` + ``after``), in the same order.
    Raises ValueError past the bound on rounds."""
    first = campaign_rounds(specs) + after
    return [more_rounds(s, n, first) for s in specs]


def more_rounds(spec: BenchmarkSpec, n: int, first: int) -> BenchmarkSpec:
    """The same Benchmark running rounds ``first`` … ``first + n − 1`` (``wanwide lab run --more-rounds``):
    ``first`` is the campaign's rounds so far (:func:`campaign_rounds`), the same for every Benchmark of it, so
    each new round holds every Benchmark (a block for comparisons between them: the Benchmarks of one round on
    one machine) and its trials number and order after the old ones. Raises ValueError past the bound on rounds."""
    from wanwide.core.api.limits import MAX_ROUNDS, ROUNDS_MSG

    if first + n > MAX_ROUNDS:
        raise ValueError(ROUNDS_MSG)
    m = spec.matrix
    matrix = m.model_validate({**m.model_dump(by_alias=True, exclude_unset=True),
                               "firstRepetition": first, "repetitions": n})
    return spec.model_copy(update={"matrix": matrix})
