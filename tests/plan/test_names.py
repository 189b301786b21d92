"""Derived names follow Kubernetes' rules for any Benchmark name the API server accepts."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.plan.bad_inputs import _b
from wanwide.core.plan import names
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
SUBDOMAIN = re.compile(names.DNS_SUBDOMAIN_RE)
# Valid object names (DNS-1123 subdomains), the longest the API server takes among them.
NAMES = ["b", "lab-delay", "my.bench.v2", "9-lives", "x" * 40, "a" * 63, "a." * 100 + "z", "b" * 253]


@pytest.mark.parametrize("name", NAMES, ids=[n[:20] for n in NAMES])
def test_derived_names_are_valid(name: str) -> None:
    for index in (0, 7, 1234):
        trial = names.trial_name(name, index)
        assert SUBDOMAIN.match(trial) and len(trial) <= 63 and LABEL_VALUE.match(trial), trial
        assert trial.endswith(f"-t{index:03d}")
        for region in ("r1", "db", "a" * 20):
            ns = names.namespace("default", name, index, region)
            assert DNS_LABEL.match(ns) and len(ns) <= 63, ns
        assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in names.labels(name, index, "r1", "wan").values())


def test_short_names_are_kept_and_long_ones_stay_distinct() -> None:
    assert names.trial_name("lab-delay", 3) == "lab-delay-t003"
    assert names.labels("lab-delay", 3)[names.L_BENCHMARK] == "lab-delay"
    a, b = "a" * 70 + "x", "a" * 70 + "y"
    assert names.trial_name(a, 0) != names.trial_name(b, 0)
    assert names.label_value(a) != names.label_value(b)
    assert names.trial_name(a, 0) == names.trial_name(a, 0)


def test_a_dotted_benchmark_plans_into_valid_namespaces() -> None:
    doc = _b()
    doc["metadata"]["name"] = "wan.study-2"
    docs = load_documents([yaml.safe_dump(doc)])
    p = plan(docs.benchmarks[0], docs.topology_for(docs.benchmarks[0]))[0]
    assert p.name == "wan.study-2-t000"
    assert all(DNS_LABEL.match(ns) for ns in p.namespaces), p.namespaces
    assert p.namespaces[0].startswith("wan-study-2-")


@pytest.mark.parametrize(("name", "ok"), [("b" * 40, True), ("b" * 41, False), ("a.b", True), ("-a", False),
                                           ("A", False), ("a_b", False), ("a..b", False)])
def test_benchmark_name_rule(name: str, ok: bool) -> None:
    assert (names.benchmark_name_problem(name) is None) is ok
