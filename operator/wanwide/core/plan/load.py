"""Read Topology/Benchmark documents (YAML streams) into models, with readable errors."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from wanwide.core.api.base import (
    DNS_LABEL_RE,
    DNS_SUBDOMAIN_RE,
    LABEL_KEY_RE,
    LABEL_VALUE_RE,
    FieldProblem,
)
from wanwide.core.api.benchmark import QUANTITY_RE, TOLERATION_KEY_RE, Benchmark
from wanwide.core.api.freeform import depth_problem
from wanwide.core.api.refs import GALERA_VALUE_HINT, GALERA_VALUE_RE
from wanwide.core.api.topology import Topology, TopologySpec
from wanwide.core.plan import names
from wanwide.core.plan.errors import PlanError, Problem
from wanwide.core.plan.yamldocs import MAX_DEPTH, YamlError, documents


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
    DNS_SUBDOMAIN_RE: "use a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and "
                      "ending with a letter or digit",
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": "use a valid S3 bucket name: 3–63 lower-case letters, digits, '.' or '-'",
    r"^https?://": "use a URL starting with http:// or https://",
    LABEL_KEY_RE: "use a label key: [prefix/]name, the name 1–63 letters, digits, '-', '_' or '.' "
                  "(such as wanwide.io/region)",
    QUANTITY_RE: "use a Kubernetes quantity, quoted, such as \"500m\", \"512Mi\", \"2Gi\" or \"1\"",
    LABEL_VALUE_RE: "use a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
                    "letter or digit",
    TOLERATION_KEY_RE: "use a label key: [prefix/]name, the name 1–63 letters, digits, '-', '_' or '.'",
    GALERA_VALUE_RE: GALERA_VALUE_HINT,
}


# What to write instead, for a value of the wrong type (the API server refuses it too).
TYPE_FIXES = {
    "string_type": "write it as text, with its unit where the field takes one (such as 20ms, 1% or 100mbit)",
    "list_type": "write a list, such as [{input}]",
    "int_from_float": "write a whole number",
    "int_type": "write a whole number",
    "model_type": "write a mapping of the fields the reference lists",
    "dict_type": "write a mapping (key: value)",
}


def validation_problems(err: ValidationError, obj: str = "") -> list[Problem]:
    """Pydantic's errors as problems of ``obj`` (``Benchmark/NAME``), each with the fix."""
    problems = []
    for e in err.errors():
        msg = e["msg"].removeprefix("Value error, ")
        loc = tuple(e["loc"])
        if isinstance((e.get("ctx") or {}).get("error"), FieldProblem):
            loc += (e["ctx"]["error"].field,)
        bound = (e.get("ctx") or {}).get("ge", (e.get("ctx") or {}).get("le"))
        if e["type"] == "greater_than_equal":
            msg = f"{msg}: {e['input']!r} is below the minimum, use {bound} or more"
        elif e["type"] == "less_than_equal":
            msg = f"{msg}: {e['input']!r} is above the maximum, use {bound} or less"
        elif e["type"] == "string_pattern_mismatch":
            pattern = (e.get("ctx") or {}).get("pattern", "")
            msg = f"{e['input']!r} is not allowed here: {PATTERN_HINTS.get(pattern, f'it must match {pattern}')}"
        elif e["type"] == "extra_forbidden":
            msg = "unknown field: remove it or check its spelling against the field reference"
        elif tuple(e["loc"]) == ("metadata",):
            msg = "write a mapping with the object's name, such as metadata: {name: my-benchmark}"
        elif e["type"] == "missing":
            msg = "required field is missing: add it"
        elif e["type"] in TYPE_FIXES:
            msg = f"{msg}: {TYPE_FIXES[e['type']].format(input=e['input'])}"
        problems.append(Problem(_loc(loc), msg, obj))
    return problems


def _name(doc: dict[str, Any]) -> str:
    """The document's name as it can be shown on one line (control characters escaped)."""
    meta = doc.get("metadata")
    name = str(meta.get("name", "?")) if isinstance(meta, dict) else "?"
    return names.shown(name)[1:-1] if not name.isprintable() or len(name) > 80 else name


# What the API server takes at the top of an object and in its metadata (strict field validation, as
# kubectl applies): anything else is an unknown field there too.
TOP_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
META_FIELDS = ("name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
               "finalizers", "managedFields", "generateName", "selfLink")
UNKNOWN = "unknown field: remove it or check its spelling against the field reference"


def _envelope_problems(doc: dict[str, Any], obj: str) -> list[Problem]:
    """Unknown top-level or metadata fields and a namespace the API server refuses."""
    out = [Problem(str(k), UNKNOWN, obj) for k in doc if k not in TOP_FIELDS]
    meta = doc.get("metadata")
    if isinstance(meta, dict):
        out += [Problem(f"metadata.{k}", UNKNOWN, obj) for k in meta if k not in META_FIELDS]
        ns = meta.get("namespace")
        if isinstance(ns, str) and (why := names.namespace_problem(ns)) is not None:
            out.append(Problem("metadata.namespace", why, obj))
    return out


FREE_FORM = ("values", "args")  # kept as written (x-kubernetes-preserve-unknown-fields keeps nulls)


def without_nulls(value: Any, keep: tuple[str, ...] = FREE_FORM) -> Any:
    """``value`` with every ``key: null`` of a mapping left out, at any depth, as the API server stores it
    (a CRD field that is not nullable; a Kubernetes object's map or list field): ``allowFewerThanThree:``
    with no value means the default, ``annotations:`` with nothing under it means none. Entries under a
    key in ``keep`` are kept as written (free-form values, where Helm reads a null as "remove")."""
    if isinstance(value, dict):
        return {k: v if k in keep else without_nulls(v, keep) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v, keep) for v in value]
    return value


def _parse(model: type[Any], doc: dict[str, Any], kind: str) -> Any:
    obj = f"{kind}/{_name(doc)}"
    if (deep := depth_problem(doc, MAX_DEPTH)) is not None:  # before anything walks it recursively
        raise PlanError([Problem("spec", f"the object {deep}: no field nests that deep", obj)])
    problems = _envelope_problems(doc, obj)
    if isinstance(doc.get("spec"), dict):
        doc = {**doc, "spec": without_nulls(doc["spec"])}
    try:
        parsed = model.model_validate(doc)
    except ValidationError as e:
        raise PlanError(problems + validation_problems(e, obj)) from None
    if problems:
        raise PlanError(problems)
    return parsed


def parse_topology(doc: dict[str, Any]) -> Topology:
    """The Topology, or PlanError naming every problem (its name included: the API server checks it too)."""
    t: Topology = _parse(Topology, doc, "Topology")
    if (why := names.object_name_problem(t.metadata.name)) is not None:
        raise PlanError([Problem("metadata.name", why, f"Topology/{_name(doc)}")])
    return t


def parse_benchmark(doc: dict[str, Any]) -> Benchmark:
    """The Benchmark, or PlanError naming every problem (its name is checked by the planner)."""
    return _parse(Benchmark, doc, "Benchmark")


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
                "spec.topologyRef",
                f"Topology {key[1]!r} not found in namespace {key[0]!r} (given: {known}): "
                "apply it first or put it in the same file",
                f"Benchmark/{bench.metadata.name}",
            )])
        return self.topologies[key].spec


def load_documents(texts: Iterable[str]) -> Documents:
    topologies: dict[tuple[str, str], Topology] = {}
    benchmarks: list[Benchmark] = []
    problems: list[Problem] = []
    for i, text in enumerate(texts):
        try:
            docs = [d for _, d in documents(f"<document {i}>", text)]
        except YamlError as e:
            raise PlanError([Problem("document", str(e))]) from None
        for doc in docs:
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
