"""Rounds added to a finished campaign in batches: ``wanwide lab run --more-rounds N [--more-rounds M …]``.

A batch of ``n`` rounds numbers its trials over those ``n`` rounds (:func:`matrix.more_rounds`: repetitions
innermost), so a round's trial ids depend on the batch it was planned in. A campaign that added rounds 6–8 as
one batch continues with a second batch (``--more-rounds 3 --more-rounds 1``: round 9), which keeps every id of
rounds 6–8 and numbers round 9 after them; ``--more-rounds 4`` would renumber rounds 6–8.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from wanwide.core.api.benchmark import Benchmark, BenchmarkSpec
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.matrix import with_more_rounds
from wanwide.core.plan.trial import TrialPlan, plan


class BenchmarkPlanError(ValueError):
    """A Benchmark the planner refused (``error``), with the Benchmark (``bench``) so the caller names its file."""

    def __init__(self, bench: Benchmark, error: PlanError) -> None:
        super().__init__(str(error))
        self.bench, self.error = bench, error


class BatchError(ValueError):
    """A batch past the bound on rounds; ``size``: the ``--more-rounds`` value that crossed it."""

    def __init__(self, size: int, message: str) -> None:
        super().__init__(message)
        self.size = size


def batches(specs: list[BenchmarkSpec], sizes: Sequence[int]) -> list[list[BenchmarkSpec]]:
    """The campaign's Benchmarks once per batch of added rounds, each batch after the ones before it (the
    campaign as written when ``sizes`` is empty). Raises BatchError past the bound on rounds."""
    if not sizes:
        return [list(specs)]
    out, after = [], 0
    for n in sizes:
        try:
            out.append(with_more_rounds(specs, n, after))
        except ValueError as e:
            raise BatchError(n, str(e)) from None
        after += n
    return out


def chain(planned: Sequence[Sequence[TrialPlan]]) -> list[TrialPlan]:
    """The trials of the batches as one plan: a later batch's run positions (each batch counts its own from 0)
    moved after every earlier batch's trials of the same Benchmark, so its rounds run after theirs."""
    offset: dict[tuple[str, str], int] = {}
    out: list[TrialPlan] = []
    for trials in planned:
        count: dict[tuple[str, str], int] = {}
        for p in trials:
            k = (p.bench_namespace, p.benchmark)
            count[k] = count.get(k, 0) + 1
            shift = offset.get(k, 0)
            out.append(p if p.position is None or not shift else dataclasses.replace(p, position=p.position + shift))
        for k, n in count.items():
            offset[k] = offset.get(k, 0) + n
    return out


def plan_campaign(benches: Sequence[Benchmark], topology_for: Callable[[Benchmark], Any],
                  sizes: Sequence[int] = ()) -> list[TrialPlan]:
    """Every trial of a campaign's Benchmarks (``Benchmark`` objects) as ``wanwide lab run`` plans them (``topology_for``: its Topology): as written,
    or the batches of added rounds ``sizes`` (``--more-rounds``) chained. Raises BatchError past the bound on
    rounds, BenchmarkPlanError for a Benchmark the planner refuses."""
    planned = []
    for spec_of in batches([b.spec for b in benches], sizes) if benches else []:
        trials: list[TrialPlan] = []
        for bench, spec in zip(benches, spec_of, strict=True):
            try:
                trials += plan(bench.model_copy(update={"spec": spec}), topology_for(bench))
            except PlanError as e:
                raise BenchmarkPlanError(bench, e) from None
        planned.append(trials)
    return chain(planned)


__all__ = ["BatchError", "BenchmarkPlanError", "batches", "chain", "plan_campaign"]
