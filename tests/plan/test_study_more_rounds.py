"""The page's command for more blocks (docs/results-study.md, "More blocks"): against the committed data set, the
campaign as written is all done, and ``--more-rounds 3`` plans rounds 6–8: none of its trials clashes with the data
set's, and the only ones the data set already holds are the trials of those rounds merged into it (a sitting's
share), which the command skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from wanwide.core.lifecycle import deployments
from wanwide.core.plan.rounds import plan_campaign
from wanwide.inputs import load_files
from wanwide.providers.lab.results import done_earlier, earlier_mismatches, earlier_runs

REPO = Path(__file__).resolve().parents[2]


def _trials(*sizes: int) -> list:
    """The study's trials as ``wanwide lab run -f manifests/examples/study.yaml --more-rounds N …`` plans them."""
    docs = load_files([str(REPO / "manifests/examples/study.yaml")]).docs
    return plan_campaign(docs.benchmarks, docs.topology_for, [n for n in sizes if n])


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


def test_a_round_after_8_is_a_second_batch_that_keeps_rounds_6_to_8():
    """``--more-rounds 3 --more-rounds 1``: rounds 6–8 exactly as the data set's runs were planned (ids,
    parameters, run order), round 9 numbered after every trial of theirs and run after them; the data set agrees
    with the whole plan. ``--more-rounds 4`` numbers rounds 6–8 otherwise, and the data set says so."""
    earlier = earlier_runs([REPO / "docs/data/study"])
    three, four, more = _trials(3), _trials(4), _trials(3, 1)
    assert [p for p in more if p.repetition < 8] == three
    nine = [p for p in more if p.repetition == 8]
    assert len(nine) == 30 and len(more) == 120
    ids = {(p.benchmark, p.id) for p in three} | set(earlier)
    assert not {(p.benchmark, p.id) for p in nine} & ids
    for b in {p.benchmark for p in more}:
        last = max(p.position for p in three if p.benchmark == b)
        assert min(p.position for p in nine if p.benchmark == b) == last + 1
        assert min(int(p.id[1:]) for p in nine if p.benchmark == b) > max(int(p.id[1:]) for p in three if p.benchmark == b)
    reps = [g[0].repetition for g in deployments(more)]
    assert reps == sorted(reps) and reps[-1] == 8  # round by round: round 9 after every deployment of rounds 6–8
    assert earlier_mismatches(earlier, more) == []
    clashes = earlier_mismatches(earlier, four)
    assert clashes and all("numbers its rounds otherwise" in c and "--more-rounds 3 --more-rounds 1" in c
                           for c in clashes), clashes[:2]


def test_a_sitting_of_round_9_in_the_wrong_batch_is_refused_before_anything_is_made(tmp_path):
    """The whole plan is checked against ``--done``, not only the sitting's share (whose round-9 ids the data set
    may not hold yet): one line per clash, at most 5 and a count, exit 2, no output directory."""
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("wanwide")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wanwide.cli"]
    r = subprocess.run([*cmd, "lab", "run", "-f", str(REPO / "manifests/examples/study.yaml"), "-o", str(out),
                        "--done", str(REPO / "docs/data/study"), "--more-rounds", "4", "--repetition", "9",
                        "--benchmark", "study-3"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO / "operator")})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("error: ") and "numbers its rounds otherwise" in lines[0], r.stderr
    assert len(lines) <= 6 and (len(lines) < 6 or lines[-1].strip().startswith("… and ")), r.stderr
    assert not out.exists()
