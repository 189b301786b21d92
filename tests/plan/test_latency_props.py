"""Property tests of the latency compiler, checked through the rendered NetworkChaos objects."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wanwide.core.api.benchmark import Benchmark
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.latency import MAX_TARGETED_RULES
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render.chaos import wan


def _ms(text: str) -> float:
    m = re.match(r"^([0-9.]+)(us|ms)$", text)
    assert m, text
    return float(m.group(1)) / (1000 if m.group(2) == "us" else 1)


@st.composite
def topologies(draw):
    n = draw(st.integers(2, 12))
    groups = draw(st.integers(1, n))
    names = [f"r{i}" for i in range(n)]
    group_of = {r: f"g{(i * groups) // n}" for i, r in enumerate(names)}
    rtts = st.sampled_from([0, 1, 5, 20, 50, 100, 150, 300])
    default = draw(rtts)
    intra = draw(st.none() | rtts)
    inter = draw(st.none() | rtts)
    overrides = []
    used: set[tuple[str, str]] = set()
    for _ in range(draw(st.integers(0, 8))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        one_way = draw(st.booleans())
        if a == b or (a, b) in used or (not one_way and (b, a) in used):
            continue
        used.add((a, b))
        if not one_way:
            used.add((b, a))
        overrides.append({"from": a, "to": b, "rtt": f"{draw(rtts)}ms", "oneWay": one_way})
    network = {"default": {"rtt": f"{default}ms"}, "overrides": overrides}
    if intra is not None:
        network["intraGroup"] = {"rtt": f"{intra}ms"}
    if inter is not None:
        network["interGroup"] = {"rtt": f"{inter}ms"}
    topo = {"regions": [{"name": r, "group": group_of[r]} for r in names], "network": network}

    # The request, computed directly from the definition: one-way delay = RTT / 2 of the
    # most specific link (override for this direction > intra/inter-group > default).
    expected = {}
    for a in names:
        for b in names:
            if a == b:
                continue
            rtt = default
            if group_of[a] == group_of[b] and intra is not None:
                rtt = intra
            if group_of[a] != group_of[b] and inter is not None:
                rtt = inter
            for o in overrides:
                if (o["from"], o["to"]) == (a, b) or (not o["oneWay"] and (o["to"], o["from"]) == (a, b)):
                    rtt = float(o["rtt"][:-2])
            expected[(a, b)] = rtt / 2
    backend = draw(st.sampled_from(["mariadb", "galera"]))
    return topo, expected, backend


def _bench(topo, backend):
    return Benchmark.model_validate({
        "metadata": {"name": "prop", "namespace": "t"},
        "spec": {"topology": topo, "database": {"backend": backend, "galera": {"allowFewerThanThree": True}},
                 "workload": {"scenarios": [{"name": "get_entities"}]}},
    })


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topologies())
def test_chaos_applies_exactly_the_requested_one_way_delays(case):
    topo, expected, backend = case
    bench = _bench(topo, backend)
    try:
        (trial,) = plan(bench, bench.spec.topology)
    except PlanError as e:
        # Only the rule budget may refuse a valid random topology, and it must say which region.
        assert all("targeted Chaos Mesh rules" in p.message and "region" in p.message for p in e.problems), e
        return
    ns_region = {trial.namespace(r): r for r in trial.region_names}
    applied: dict[tuple[str, str], float] = {}
    rules_per_pod: dict[str, int] = {}
    for o in wan(trial):
        spec = o["spec"]
        assert spec["action"] == "netem" and spec["direction"] == "to"
        src_sel, dst_sel = spec["selector"], spec["target"]["selector"]
        # never anything outside the trial's own namespaces
        for sel in (src_sel, dst_sel):
            for ns in sel.get("namespaces", []) + list(sel.get("pods", {})):
                assert ns in trial.namespaces
        srcs = _regions(src_sel, ns_region, trial)
        dsts = _regions(dst_sel, ns_region, trial)
        assert not set(srcs) & set(dsts), "traffic inside a region must never be shaped"
        delay = _ms(spec["delay"]["latency"]) if "delay" in spec else 0.0
        key = "n" if "namespaces" in src_sel else "m"
        for s in srcs:
            rules_per_pod[f"{s}/{key}"] = rules_per_pod.get(f"{s}/{key}", 0) + 1
            for d in dsts:
                prev = applied.setdefault((s, d), delay)
                assert prev == delay, f"{s}->{d} shaped twice with different delays"
    for pair, want in expected.items():
        assert abs(applied.get(pair, 0.0) - want) < 1e-6, (pair, applied.get(pair), want)
    assert max(rules_per_pod.values(), default=0) <= MAX_TARGETED_RULES


def _regions(sel, ns_region, trial):
    if "namespaces" in sel:
        return [ns_region[n] for n in sel["namespaces"]]
    from wanwide.providers.kubernetes.render.database import members

    by_pod = {p: r for r, p in members(trial).items()}
    return [by_pod[p] for pods in sel["pods"].values() for p in pods]


def test_too_many_link_classes_is_a_clean_error_naming_the_region():
    names = [f"r{i}" for i in range(16)]
    overrides = [{"from": "r0", "to": f"r{i}", "rtt": f"{10 * i}ms"} for i in range(1, 16)]
    bench = _bench({"regions": [{"name": n} for n in names], "network": {"default": {"rtt": "5ms"}, "overrides": overrides}},
                   "mariadb")
    try:
        plan(bench, bench.spec.topology)
    except PlanError as e:
        msgs = " ".join(p.message for p in e.problems)
        assert "'r0'" in msgs and "coarser groups" in msgs
        assert [str(p).split(": ")[:2] for p in e.problems] == [["Benchmark/prop", "spec.topology.network"]]
    else:
        raise AssertionError("15 distinct classes from r0 must be refused")
