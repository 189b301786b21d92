"""The hostile corpus (tests/plan/hostile.py) through the real command line, as a new user runs it.

Every file goes to ``wanwide plan -f FILE --all`` in a process of its own with 1 GiB of address space
(RLIMIT_AS) and 30 s: exit 2, one line on stderr naming the field (or the file's line) and the fix, no
traceback, nothing on stdout, within both limits. The valid base plans under the same limits. Two
processes at a time (the machine has two cores); the peak memory and time of each are recorded
(``-s`` prints the worst).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.plan.hostile import CASES, Hostile, base
from tests.plan.limited import SECONDS, Run, plan_file


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    d = tmp_path_factory.mktemp("hostile")
    paths = {}
    for c in CASES:
        if c.path is not None:
            paths[c.id] = Path(c.path)
        else:
            (d / c.id).mkdir()
            paths[c.id] = d / c.id / "hx.yaml"
            paths[c.id].write_bytes(c.data())
    (d / "valid").mkdir()
    paths["valid"] = d / "valid" / "hx.yaml"
    paths["valid"].write_text(yaml.safe_dump(base()))
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(paths, pool.map(plan_file, paths.values()), strict=True))


def test_the_corpus_is_large_and_varied():
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
    kinds = {c.id.split("-")[0] for c in CASES}
    assert kinds >= {"yaml", "name", "rtt", "rate", "timeout", "dropout", "partition", "matrix", "links", "chart",
                     "galera", "s3", "image"}, kinds
    assert sum(c.admission is True for c in CASES) >= 60, "most are refused by the API server too"


def test_the_valid_base_plans_within_the_limits(runs):
    r = runs["valid"]
    assert r.code == 0, r.stderr
    assert r.stdout.startswith("# Benchmark lab/hx: 1 trials")


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_refused_in_one_line_naming_the_field_and_the_fix(runs, c: Hostile):
    r = runs[c.id]
    assert r.code is not None, f"{c.id}: still running after {SECONDS:.0f} s"
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr[-2000:]
    assert r.code == 2, (r.code, r.stderr[-2000:])
    assert r.stdout == "", "nothing partial on stdout"
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr[-2000:]
    assert lines[0].startswith("wanwide: error: "), lines[0]
    assert c.field in lines[0], f"does not name {c.field!r}: {lines[0]}"
    assert c.fix in lines[0], f"does not say {c.fix!r}: {lines[0]}"


def test_the_worst_refusals_stay_far_below_the_limits(runs):
    """Refusing is cheap: no hostile file costs more than a fraction of the limits (the peak RSS of a plain
    ``wanwide plan`` is ~40 MB, its start ~0.5 s of CPU)."""
    worst = sorted(((r.cpu_s, r.peak_mb, k) for k, r in runs.items() if k != "valid"), reverse=True)
    print("\nworst refusals (CPU s, peak RSS MB, case):", *(f"{c:.2f} s {m:.0f} MB {k}" for c, m, k in worst[:8]),
          sep="\n  ")
    assert max(m for _, m, _ in worst) < 300
    assert max(c for c, _, _ in worst) < 10
