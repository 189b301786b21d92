"""Read Topology/Benchmark documents (YAML streams) into models, with readable errors."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from ..api.base import DNS_LABEL_RE
from ..api.benchmark import Benchmark
from ..api.topology import Topology, TopologySpec
from .errors import PlanError, Problem


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after[check(), str]",) or str(part).startswith("function-"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


PATTERN_HINTS = {
    DNS_LABEL_RE: "use lower-case letters, digits and '-', starting with a letter (a DNS label)",
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": "use a valid S3 bucket name: 3–63 lower-case letters, digits, '.' or '-'",
    r"^https?://": "use a URL starting with http:// or https://",
}


def validation_problems(err: ValidationError, prefix: str = "") -> list[Problem]:
    problems = []
    for e in err.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "string_pattern_mismatch":
            pattern = (e.get("ctx") or {}).get("pattern", "")
            msg = f"{e['input']!r} is not allowed here: {PATTERN_HINTS.get(pattern, f'it must match {pattern}')}"
        elif e["type"] == "extra_forbidden":
            msg = "unknown field: remove it or check its spelling against the field reference"
        elif e["type"] == "missing":
            msg = "required field is missing: add it"
        problems.append(Problem(prefix + _loc(e["loc"]), msg))
    return problems


def parse_topology(doc: dict[str, Any]) -> Topology:
    try:
        return Topology.model_validate(doc)
    except ValidationError as e:
        raise PlanError(validation_problems(e, f"Topology/{doc.get('metadata', {}).get('name', '?')}: ")) from None


def parse_benchmark(doc: dict[str, Any]) -> Benchmark:
    try:
        return Benchmark.model_validate(doc)
    except ValidationError as e:
        raise PlanError(validation_problems(e, f"Benchmark/{doc.get('metadata', {}).get('name', '?')}: ")) from None


@dataclass
class Documents:
    topologies: dict[tuple[str, str], Topology]
    benchmarks: list[Benchmark]

    def topology_for(self, bench: Benchmark) -> TopologySpec:
        if bench.spec.topology is not None:
            return bench.spec.topology
        key = (bench.metadata.namespace, bench.spec.topology_ref or "")
        if key not in self.topologies:
            known = ", ".join(n for _, n in self.topologies) or "none"
            raise PlanError([Problem(
                f"Benchmark/{bench.metadata.name}: spec.topologyRef",
                f"Topology {key[1]!r} not found in namespace {key[0]!r} (given: {known}): "
                "apply it first or put it in the same file",
            )])
        return self.topologies[key].spec


def load_documents(texts: Iterable[str]) -> Documents:
    topologies: dict[tuple[str, str], Topology] = {}
    benchmarks: list[Benchmark] = []
    problems: list[Problem] = []
    for text in texts:
        for doc in yaml.safe_load_all(text):
            if not doc:
                continue
            kind = doc.get("kind")
            try:
                if kind == "Topology":
                    t = parse_topology(doc)
                    topologies[(t.metadata.namespace, t.metadata.name)] = t
                elif kind == "Benchmark":
                    benchmarks.append(parse_benchmark(doc))
            except PlanError as e:
                problems.extend(e.problems)
    if problems:
        raise PlanError(problems)
    return Documents(topologies, benchmarks)
