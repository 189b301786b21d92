"""`kubectl get benchmarks` on a swept Benchmark, printed by the real API server from the operator's status:
the backends and loads the trials run (not spec.database.backend), the sweep, and the time left."""

from __future__ import annotations

import re
import time

import pytest
import yaml

from tests.cluster.operator_env import example
from wanwide.core.timestamps import parse

pytestmark = pytest.mark.cluster
NAME = "swept"


def _swept(tc) -> str:
    docs = list(yaml.safe_load_all(example(tc, "uniform-9.yaml", cleanup="Always")))
    b = next(d for d in docs if d["kind"] == "Benchmark")
    b["metadata"]["name"] = NAME
    del b["spec"]["topologyRef"]
    b["spec"]["topology"] = {"generate": {"count": 3}, "network": {"default": {"rtt": "20ms"}}}
    b["spec"]["matrix"] = {"backend": ["mariadb", "galera"], "rtt": ["10ms", "20ms"], "parallelism": 2}
    b["spec"]["preflight"] = {"mode": "Warn"}  # no storage for Galera's claims here (operator_env.example)
    return yaml.safe_dump(b)


def _table(tc, ns: str, *extra: str) -> dict[str, str]:
    """The Benchmark's row of `kubectl get benchmarks` as {column: value} (the API server's Table)."""
    out = tc.kubectl("get", "benchmarks", "-n", ns, *extra).stdout.splitlines()
    head = out[0]
    starts = [m.start() for m in re.finditer(r"\S+", head)]
    names = head.split()
    row = next(line for line in out[1:] if line.startswith(NAME + " "))
    cells = [row[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return dict(zip(names, cells, strict=True))


def _until(what, timeout: float, step: float = 2.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = what()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"not within {timeout}s")


def test_kubectl_get_benchmarks_says_what_runs_and_when_it_ends(env):
    tc, ns = env["tc"], env["ns"]
    tc.apply(_swept(tc), ns)
    row = _until(lambda: (r := _table(tc, ns)) and r.get("BACKEND") not in ("", "<none>") and r, 120)
    assert row["BACKEND"] == "mariadb,galera" and row["LOAD"] == "light", row  # the sweep, not spec's mariadb
    wide = _table(tc, ns, "-o", "wide")
    assert wide["SWEEP"] == "backend=mariadb,galera rtt=10ms,20ms", wide
    print("while no trial is done:", row)

    monitors: set[str] = set()

    def one_done_more_to_run():
        got = tc.kubectl("get", "podmonitors", "-A", "-l", f"wanwide.io/benchmark={NAME}", "-o",
                         "jsonpath={.items[*].metadata.name}", check=False).stdout
        monitors.update(got.split())
        s = tc.kubectl_json("get", "benchmark", NAME, "-n", ns)["status"]
        t = s.get("trials") or {}
        return s if 0 < (t.get("succeeded", 0) + t.get("failed", 0)) < t.get("total", 0) else None

    mid = _until(one_done_more_to_run, 900, 1.0)
    # the runners' live metrics are scraped: the trial's PodMonitor, accepted by the real CRD's schema
    assert "rally" in monitors, monitors
    assert re.fullmatch(r"\d+m|\d+h\d\dm|\d+d\d+h", mid["timeLeft"]), mid
    eta = parse(mid["estimatedCompletionTime"])
    row = _table(tc, ns)
    print("with a trial done:", row, mid["estimatedCompletionTime"])
    assert row["LEFT"] == mid["timeLeft"] or re.fullmatch(r"\d+m|\d+h\d\dm", row["LEFT"]), row

    def finished():
        s = tc.kubectl_json("get", "benchmark", NAME, "-n", ns)["status"]
        return s if s.get("phase") in ("Succeeded", "Failed") else None

    end = _until(finished, 1200)
    row = _table(tc, ns)
    print("at the end:", row, end.get("completionTime"))
    assert row["PROGRESS"] == "4/4" and row["LEFT"] == "0m" and end.get("estimatedCompletionTime") is None, row
    # the estimate made with one trial done, against when it did end
    print(f"estimated end {eta.isoformat()}, ended {end['completionTime']}")
