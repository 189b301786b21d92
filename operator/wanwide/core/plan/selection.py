"""Which planned trials a lab sitting runs: ``wanwide lab run --benchmark NAME --repetition N``."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from wanwide.core.plan.trial import TrialPlan


def select(trials: Sequence[TrialPlan], benchmarks: Collection[str] = (),
           repetitions: Collection[int] = ()) -> list[TrialPlan]:
    """The trials of these Benchmarks (all when none is named) and repetitions (``TrialPlan.repetition``, from 0;
    all when none is named), in plan order. Raises ValueError naming the flag and what the files hold when a name or number selects nothing,
    so a typo is not a sitting that runs nothing (or everything)."""
    have = list(dict.fromkeys(t.benchmark for t in trials))
    if missing := [b for b in benchmarks if b not in have]:
        raise ValueError(f"--benchmark {missing[0]}: no such Benchmark in the files (they hold {', '.join(have)})")
    picked = [t for t in trials if not benchmarks or t.benchmark in benchmarks]
    reps = sorted({t.repetition for t in picked})
    if missing_r := [r for r in repetitions if r not in reps]:
        held = f"{reps[0] + 1}–{reps[-1] + 1}" if len(reps) > 1 else str(reps[0] + 1) if reps else "none"
        raise ValueError(f"--repetition {missing_r[0] + 1}: no trial of the selected Benchmarks has it "
                         f"(their repetitions, counted from 1: {held}; with --more-rounds, the new ones)")
    return [t for t in picked if not repetitions or t.repetition in repetitions]
