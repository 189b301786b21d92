"""`wanwide compare --fail-on`: a CI job fails on a regression between two campaigns, and only on one
beyond the bound with its interval. Two synthetic campaigns whose truth is known: Galera's
authenticate 50 % slower at RTT 100 ms in NEW (0.6 s → 0.9 s: +0.3 s, 3 round trips), the
same elsewhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.results.synthetic import ACTIONS, write_bundle
from wanwide.pipeline.results.gate import GateError, parse_rule


def median(backend: str, rtt: float, load: str) -> float:
    return 0.5 + rtt / 1000


def _campaign(root: Path, factor: float, seed: int, errors: int = 0, failed_run: bool = False) -> Path:
    """Galera at RTT 0 and 100 ms, 3 repetitions of 40 iterations; ``factor`` multiplies RTT 100 ms."""
    rng = np.random.default_rng(seed)
    k = 0
    for rtt in (0, 100):
        for rep in range(3):
            m = median("galera", rtt, "light") * (factor if rtt == 100 else 1.0)
            fetch = m * np.exp(rng.normal(0, 0.03)) * np.exp(rng.normal(0, 0.1, 40))
            write_bundle(root, "camp", f"t{k:03d}", rep, {"backend": "galera", "rtt": f"{rtt}ms", "load": "light"},
                         "r1", {ACTIONS[0]: fetch, ACTIONS[1]: fetch / 10}, run=k + 100 * seed,
                         errors=errors if k == 0 else 0)
            k += 1
    if failed_run:
        write_bundle(root, "camp", f"t{k:03d}", 0, {"backend": "galera", "rtt": "0ms", "load": "light"}, "r2",
                     {ACTIONS[0]: np.array([0.5]), ACTIONS[1]: np.array([0.05])}, run=k + 100 * seed,
                     result="failed")
    return root


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("gate")
    return _campaign(d / "base", 1.0, 1), _campaign(d / "new", 1.5, 2)


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("wanwide")
    return subprocess.run([str(exe), "compare", *args, "--no-history"], capture_output=True, text=True, timeout=600)


def test_a_regression_beyond_the_bound_fails_the_job(campaigns):
    base, new = campaigns
    p = _compare(str(base), str(new), "--total-only", "--fail-on", "slower>10%")
    assert p.returncode == 1, p.stdout + p.stderr
    fails = [ln for ln in p.stdout.splitlines() if ln.startswith("FAIL ")]
    assert len(fails) == 1 and "rtt=100ms" in fails[0] and "slower>10%" in fails[0], p.stdout
    assert "1 breach(es) -> exit 1" in p.stdout


def test_a_bound_the_interval_does_not_clear_passes(campaigns):
    base, new = campaigns
    p = _compare(str(base), str(new), "--total-only", "--fail-on", "slower>80%", "--fail-on", "faster>10%")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "passed (4 checked) -> exit 0" in p.stdout


def test_round_trips_and_absolute_bounds(campaigns):
    base, new = campaigns  # +0.3 s at RTT 100 ms: 3 round trips
    assert _compare(str(base), str(new), "--total-only", "--fail-on", "slower>2rtt").returncode == 1
    p = _compare(str(base), str(new), "--total-only", "--fail-on", "slower>4rtt")
    assert p.returncode == 0, p.stdout
    assert _compare(str(base), str(new), "--total-only", "--fail-on", "slower>200ms").returncode == 1
    assert _compare(str(base), str(new), "--total-only", "--fail-on", "slower>0.5s").returncode == 0


def test_any_failure_fails(tmp_path, campaigns):
    base, _ = campaigns
    bad = _campaign(tmp_path / "bad", 1.0, 3, errors=2, failed_run=True)
    p = _compare(str(base), str(bad), "--total-only", "--fail-on", "failures")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "2 of 121 iterations failed (1.7%)" in p.stdout  # 3 runs of 40 and the failed run's 1
    assert "RallyTaskFailed" in p.stdout  # the run that failed, too
    assert _compare(str(base), str(bad), "--total-only", "--fail-on", "failures>10%").returncode == 0
    assert _compare(str(base), str(base), "--total-only", "--fail-on", "failures").returncode == 0


def test_bad_rules_are_one_line_and_exit_2(campaigns):
    base, new = campaigns
    for rule, says in (("slower", "needs a bound"), ("slower>10", "give the bound a unit"),
                       ("worse>10%", "write DIRECTION>BOUND"), ("failures>2rtt", "failures>1%")):
        p = _compare(str(base), str(new), "--fail-on", rule)
        assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1, (rule, p.stderr)
    p = _compare(str(base), str(new), "--base-where", "rtt=0ms", "--new-where", "rtt=100ms", "--fail-on", "slower>1rtt")
    assert p.returncode == 2 and "rtt parameter" in p.stderr, p.stderr


def test_rules_parse():
    assert parse_rule("slower>10%").bound == pytest.approx(0.10)
    assert parse_rule("change > 2.5 rtt").unit == "rtt"
    assert parse_rule("slower>50ms").bound == pytest.approx(0.05)
    assert parse_rule("failures").bound is None
    with pytest.raises(GateError):
        parse_rule("slower<10%")
