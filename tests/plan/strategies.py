"""Hypothesis strategies for schema-valid Benchmark and Topology documents (camelCase, as users write them).

Each field is drawn within the bounds of the pydantic models (the CRD's source), so
every document passes the schema; cross-field rules (regions a fault names, galera's
three regions, …) are left to chance, which is what the corpus wants to compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from wanwide.core.api.scenarios import SHORT_NAMES

Doc = dict[str, Any]
REGION_POOL = ("paris", "rennes", "chicago", "r1", "r2", "eu-west", "a", "z9")
NAMES = st.builds(lambda a, b, n: f"{a}-{b}{n}"[:40].rstrip("-"),
                  st.sampled_from(("bench", "my", "wan", "a", "keystone-galera", "x" * 30)),
                  st.sampled_from(("delay", "sweep", "t", "9")), st.integers(0, 99))


def _opt(draw: st.DrawFn, d: Doc, key: str, strategy: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        d[key] = draw(strategy)


def duration(max_n: int = 500) -> st.SearchStrategy[str]:
    return st.builds(lambda n, u: f"{n}{u}", st.integers(0, max_n), st.sampled_from(("us", "ms", "s", "m")))


def rtt() -> st.SearchStrategy[str]:
    """A round trip within the API's bound (at most 10s)."""
    return st.one_of(st.builds(lambda n, u: f"{n}{u}", st.integers(0, 500), st.sampled_from(("us", "ms"))),
                     st.integers(0, 10).map(lambda n: f"{n}s"))


def seconds(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(lo, hi).map(lambda n: f"{n}s")


def timeout() -> st.SearchStrategy[str]:
    """A phase timeout (1s to 24h); the load's is long enough for the fault windows below (2 to 120 minutes)."""
    return st.integers(2, 120).map(lambda n: f"{n}m")


def percent() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(0, 100).map(lambda n: f"{n}%"),
                     st.integers(0, 99).map(lambda n: f"{n}.5%"))


def rate() -> st.SearchStrategy[str]:
    return st.one_of(st.builds(lambda n, u: f"{n}{u}", st.integers(1, 1000), st.sampled_from(("kbit", "mbit"))),
                     st.integers(1, 100).map(lambda n: f"{n}gbit"))  # the API's bounds: 1kbit to 100gbit


@st.composite
def link(draw: st.DrawFn) -> Doc:
    d: Doc = {}
    _opt(draw, d, "rtt", rtt())
    _opt(draw, d, "jitter", st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10), st.sampled_from(("us", "ms", "s"))))
    _opt(draw, d, "loss", percent())
    _opt(draw, d, "rate", rate())
    return d


@st.composite
def topology_spec(draw: st.DrawFn) -> Doc:
    d: Doc
    if draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(REGION_POOL), min_size=1, max_size=5, unique=True))
        groups = draw(st.lists(st.sampled_from(("eu", "us", None)), min_size=len(names), max_size=len(names)))
        d = {"regions": [{"name": n, **({"group": g} if g else {})} for n, g in zip(names, groups, strict=True)]}
    else:
        count = draw(st.integers(1, 6))
        d = {"generate": {"count": count, "groups": draw(st.integers(1, count))}}
        _opt(draw, d["generate"], "prefix", st.sampled_from(("r", "site-", "dc")))
        names = [f"{d['generate'].get('prefix', 'r')}{i + 1}" for i in range(count)]
    net: Doc = {}
    _opt(draw, net, "default", link())
    _opt(draw, net, "intraGroup", link())
    _opt(draw, net, "interGroup", link())
    if len(names) > 1 and draw(st.booleans()):
        pairs = draw(st.lists(st.permutations(names).map(lambda p: p[:2]), min_size=1, max_size=3,
                              unique_by=frozenset))
        net["overrides"] = [{"from": a, "to": b, "rtt": draw(rtt()),
                             **({"oneWay": True} if draw(st.booleans()) else {})} for a, b in pairs]
    if net:
        d["network"] = net
    if draw(st.booleans()):
        d["placement"] = {"mode": draw(st.sampled_from(("regionLabel", "none")))}
    return d


def region_names(topology: Doc) -> list[str]:
    if "regions" in topology:
        return [r["name"] for r in topology["regions"]]
    g = topology["generate"]
    return [f"{g.get('prefix', 'r')}{i + 1}" for i in range(g["count"])]


@st.composite
def workload(draw: st.DrawFn, regions: list[str]) -> Doc:
    scenario = st.fixed_dictionaries({"name": st.sampled_from(SHORT_NAMES)},
                                     optional={"times": st.integers(1, 100), "concurrency": st.integers(1, 10)})
    d: Doc = {"scenarios": draw(st.lists(scenario, min_size=1, max_size=3))}
    d["load"] = draw(st.sampled_from(("light", "high")))
    if d["load"] == "light" and draw(st.booleans()):
        d["loadRegion"] = draw(st.sampled_from(regions))
    _opt(draw, d, "times", st.integers(1, 1000))
    _opt(draw, d, "concurrency", st.integers(1, 20))
    _opt(draw, d, "warmup", st.fixed_dictionaries({"times": st.integers(1, 20)}))
    _opt(draw, d, "startDelay", seconds(0, 3600))
    return d


@st.composite
def faults(draw: st.DrawFn, regions: list[str]) -> Doc:
    some = st.lists(st.sampled_from(regions), min_size=1, max_size=2, unique=True)
    d: Doc = {}
    _opt(draw, d, "partitions", st.lists(st.fixed_dictionaries(
        {"regions": some, "duration": seconds(1, 60)}, optional={"start": seconds(0, 60)}), max_size=2))
    period = st.integers(10, 100).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 1)))
    _opt(draw, d, "dropouts", st.lists(st.builds(
        lambda p, r: {"every": f"{p[0]}s", "for": f"{p[1] * 1000}ms", **({"regions": r} if r else {})},
        period, st.none() | some), max_size=2))
    _opt(draw, d, "lossWindows", st.lists(st.fixed_dictionaries(
        {"regions": some, "duration": seconds(1, 60), "loss": percent()}), max_size=2))
    return d


@st.composite
def matrix(draw: st.DrawFn) -> Doc:
    axis = {
        "backend": st.lists(st.sampled_from(("mariadb", "galera", "cockroachdb")), min_size=1, max_size=2, unique=True),
        "regions": st.lists(st.integers(1, 6), min_size=1, max_size=2, unique=True),
        "rtt": st.lists(rtt(), min_size=1, max_size=2, unique=True),
        "loss": st.lists(percent(), min_size=1, max_size=2, unique=True),
        "load": st.lists(st.sampled_from(("light", "high")), min_size=1, max_size=2, unique=True),
        "scenario": st.lists(st.sampled_from(SHORT_NAMES), min_size=1, max_size=2, unique=True),
        "repetitions": st.integers(1, 2),
        "parallelism": st.integers(1, 5),
    }
    keys = draw(st.lists(st.sampled_from(sorted(axis)), max_size=3, unique=True))
    return {k: draw(axis[k]) for k in keys}


@st.composite
def benchmark_spec(draw: st.DrawFn) -> Doc:
    topo = draw(topology_spec())
    regions = region_names(topo)
    d: Doc = {"topology": topo, "workload": draw(workload(regions))}
    db: Doc = {"backend": draw(st.sampled_from(("mariadb", "galera", "cockroachdb")))}
    _opt(draw, db, "primaryRegion", st.sampled_from(regions))
    _opt(draw, db, "inMemory", st.booleans())
    if db["backend"] == "galera" and draw(st.booleans()):
        db["galera"] = {"allowFewerThanThree": draw(st.booleans())}
    d["database"] = db
    _opt(draw, d, "faults", faults(regions))
    _opt(draw, d, "matrix", matrix())
    _opt(draw, d, "results", st.one_of(
        st.just({"objectBucketClaim": "results"}),
        st.fixed_dictionaries({"s3": st.fixed_dictionaries(
            {"endpoint": st.just("http://s3:7070"), "bucket": st.sampled_from(("results", "a.b-c")),
             "secretRef": st.just({"name": "s3-keys"})}, optional={"prefix": st.sampled_from(("x", "a/b"))})})))
    _opt(draw, d, "runner", st.fixed_dictionaries({}, optional={
        "maxAttempts": st.integers(1, 10), "rallyUsers": st.sampled_from(("Prepared", "PerSubtask"))}))
    _opt(draw, d, "openstack", st.fixed_dictionaries({"keystone": st.fixed_dictionaries({}, optional={
        "replicas": st.integers(1, 10), "cache": st.booleans()})}))
    _opt(draw, d, "cleanup", st.sampled_from(("Always", "OnSuccess", "Never")))
    _opt(draw, d, "timeouts", st.fixed_dictionaries({}, optional={"loading": timeout(), "provisioning": timeout()}))
    _opt(draw, d, "monitoring", st.fixed_dictionaries({}, optional={
        "enabled": st.booleans(), "labels": st.just({"release": "kube-prometheus-stack"})}))
    return d


def _doc(kind: str, name: str, spec: Doc) -> Doc:
    return {"apiVersion": "wanwide.io/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}


@st.composite
def benchmarks(draw: st.DrawFn) -> Doc:
    return _doc("Benchmark", draw(NAMES.filter(lambda n: len(n) <= 40)), draw(benchmark_spec()))


@st.composite
def topologies(draw: st.DrawFn) -> Doc:
    return _doc("Topology", draw(NAMES), draw(topology_spec()))


def using(topology: Doc) -> Doc:
    """A small valid Benchmark that refers to ``topology`` by name (how a Topology reaches the planner)."""
    meta = topology.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    ref = name if isinstance(name, str) and name else "missing"
    return _doc("Benchmark", "uses-topology", {"topologyRef": ref, "workload": {
        "scenarios": [{"name": "create_and_list_users", "times": 2}]}})


def collect(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """``n`` examples of ``strategy``: derandomized, no example database."""
    out: list[Any] = []

    @settings(derandomize=True, max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(x: Any) -> None:
        out.append(x)

    draw()
    return out


def valid_documents(n_benchmarks: int, n_topologies: int) -> tuple[list[Doc], list[Doc]]:
    """(Benchmarks, Topologies), drawn in a fresh Python: the same on every run.

    Hypothesis mixes literals of every loaded local module into its draws, so in a test
    session the draws would depend on which modules other tests imported before.
    """
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'operator'}:{root}"}
    out = subprocess.run([sys.executable, "-m", "tests.plan.strategies", str(n_benchmarks), str(n_topologies)],
                         capture_output=True, text=True, check=True, env=env, cwd=root, timeout=600).stdout
    docs = json.loads(out)
    return docs["benchmarks"], docs["topologies"]


if __name__ == "__main__":
    nb, nt = (int(a) for a in sys.argv[1:3])
    json.dump({"benchmarks": collect(benchmarks(), nb), "topologies": collect(topologies(), nt)}, sys.stdout)
