"""The page's command for more blocks (docs/results-study.md, "More blocks"): against the committed data set, the
campaign as written is all done, and ``--more-rounds 3`` plans rounds 6–8: none of its trials clashes with the data
set's, and the only ones the data set already holds are the trials of those rounds merged into it (a sitting's
share), which the command skips."""

from __future__ import annotations

from pathlib import Path

from wanwide.core.lifecycle import deployments
from wanwide.core.plan.matrix import with_more_rounds
from wanwide.core.plan.trial import plan
from wanwide.inputs import load_files
from wanwide.providers.lab.results import done_earlier, earlier_mismatches, earlier_runs

REPO = Path(__file__).resolve().parents[2]


def _trials(n: int) -> list:
    docs = load_files([str(REPO / "manifests/examples/study.yaml")]).docs
    specs = with_more_rounds([b.spec for b in docs.benchmarks], n) if n else [b.spec for b in docs.benchmarks]
    out = []
    for b, spec in zip(docs.benchmarks, specs, strict=True):
        out += plan(b.model_copy(update={"spec": spec}), docs.topology_for(b))
    return out


def test_more_rounds_plan_only_new_trials_against_the_study_data_set():
    earlier = earlier_runs([REPO / "docs/data/study"])
    written = _trials(0)
    assert earlier_mismatches(earlier, written) == [] and all(done_earlier(earlier, p) for p in written)
    more = _trials(3)
    assert earlier_mismatches(earlier, more) == []
    merged = set(earlier) - {(p.benchmark, p.id) for p in written}  # trials of the new rounds already in the data
    held = [p for p in more if (p.benchmark, p.id) in set(earlier)]
    assert {(p.benchmark, p.id) for p in held} == merged
    assert all(p.repetition >= 5 and done_earlier(earlier, p) for p in held)
    assert len(more) == 90  # the page's study-plan block: 90 trials in 3 rounds
    rounds: dict = {}
    for g in deployments(more):
        rounds.setdefault(g[0].repetition, set()).add(g[0].benchmark)
    assert rounds == {r: {"study-3", "study-9", "study-45", "study-3-high", "study-9-high"} for r in (5, 6, 7)}
