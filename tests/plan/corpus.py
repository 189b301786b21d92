"""A generated corpus of Benchmark and Topology files: valid documents and near-misses.

Hypothesis strategies over the spec models (``tests.plan.strategies``) draw valid documents;
one mutation each turns a copy into a near-miss (wrong type, quoted number, out of range,
unknown field, bad unit, empty list, bad name, one-of conflict, a field dropped). Every
manifests/examples file joins them with every one of its fields dropped, given another
type or perturbed. Derandomized, drawn in a fresh Python, and a seeded RNG picks the mutations:
every run feeds the same files.

``planner_verdict`` reads a file exactly as ``wanwide plan`` does; the cluster test
(tests/cluster/test_corpus.py) asks the API server for its verdict on the same documents.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.plan import strategies as s
from wanwide.cli import render_plans
from wanwide.core.errors import UserError
from wanwide.inputs import load_texts

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples"
Path_ = tuple[str | int, ...]


@dataclass
class Case:
    """One file: its documents as a user writes them, and what was done to make it."""

    id: str
    category: str  # "valid", a mutation name, or "example-<mutation>"
    docs: list[dict[str, Any]]
    tags: list[str] = field(default_factory=list)

    def text(self) -> str:
        return yaml.safe_dump_all(self.docs, sort_keys=False)


# ---- mutations ----------------------------------------------------------------------------

BAD_UNITS = ("20", "20 ms", "-5ms", "20sec", "1.5.0ms", "ms", "150%", "0.5", "100mbps", "1e3ms", "")
BAD_NAMES = ("Upper_Case", "-leading-dash", "a" * 70, "", "with space", "dot.", "x_y")
WRONG_TYPES: dict[type, tuple[Any, ...]] = {
    bool: ("true", 1, "yes", None),
    int: ("ten", 2.5, True, [3], {"n": 3}),
    float: ("ten", True),
    str: (20, True, ["x"], {"a": "b"}, 0.5),
    list: ("x", 3, {"a": 1}),
    dict: ("x", 3, ["a"]),
}
FREE_FORM = ("values", "args", "labels", "nodeSelector", "providerOptions")  # maps of any keys
ONE_OF = (
    (("spec",), "topologyRef", "other"),  # with an inline topology
    (("spec", "workload"), "taskConfigMap", {"name": "task"}),
    (("spec", "results"), "objectBucketClaim", "obc"),
)


def nodes(doc: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) below ``doc``, the document itself excluded."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for k, v in items:
        yield (*path, k), v
        yield from nodes(v, (*path, k))


def get(doc: Any, path: Path_) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def put(doc: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    get(out, path[:-1])[path[-1]] = value
    return out


def drop(doc: dict[str, Any], path: Path_) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    parent = get(out, path[:-1])
    del parent[path[-1]]
    return out


def _is_unit(v: Any) -> bool:
    return isinstance(v, str) and v[:1].isdigit() and v[-1:].isalpha() | v.endswith("%")


def _is_name(path: Path_) -> bool:
    last = path[-1]
    return last in ("name", "from", "to", "loadRegion", "primaryRegion", "topologyRef", "group") or (
        isinstance(last, int) and path[-2] == "regions" and isinstance(path[-3], str)
        and path[-3] != "matrix")


DROP = object()  # a Mutation's value: delete the field


@dataclass(frozen=True)
class Mutation:
    """``value`` at ``path`` (DROP: the field deleted)."""

    category: str
    path: Path_
    value: Any

    @property
    def where(self) -> str:
        return ".".join(map(str, self.path)) or "(top)"

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        return drop(doc, self.path) if self.value is DROP else put(doc, self.path, self.value)


def mutations(doc: dict[str, Any]) -> list[Mutation]:
    """Every near-miss of ``doc`` this module knows (cheap: nothing is copied until applied)."""
    out: list[Mutation] = []
    for path, v in nodes(doc):
        if path[0] not in ("spec", "metadata") or path == ("metadata", "namespace"):
            continue
        m = lambda cat, value, path=path: Mutation(cat, path, value)  # noqa: E731
        if isinstance(path[-1], str) and path != ("metadata", "name"):
            out.append(m("drop", DROP))
        out += [m("wrong-type", bad) for bad in WRONG_TYPES.get(type(v), ())]
        if isinstance(v, int) and not isinstance(v, bool):
            out += [m("quoted-number", str(v)), *(m("out-of-range", x) for x in (-1, 0, 10**6))]
        if isinstance(v, bool):
            out.append(m("quoted-number", str(v).lower()))
        if _is_unit(v):
            out += [m("bad-unit", u) for u in BAD_UNITS]
        if isinstance(v, str) and _is_name(path):
            out += [m("bad-name", n) for n in BAD_NAMES]
        if isinstance(v, list) and v:
            out.append(m("empty-list", []))
        if isinstance(v, dict) and path[-1] not in FREE_FORM:
            out.append(Mutation("unknown-field", (*path, "colour"), "blue"))
    for parent, key, value in ONE_OF:
        node = doc
        for k in parent:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and key not in node:
            out.append(Mutation("one-of-conflict", (*parent, key), value))
    topo = doc.get("spec", {}).get("topology")
    if isinstance(topo, dict):
        k, val = ("generate", {"count": 3}) if "regions" in topo else ("regions", [{"name": "a"}])
        out.append(Mutation("one-of-conflict", ("spec", "topology", k), val))
    out.append(Mutation("unknown-field", ("colour",), "blue"))
    return out


# ---- the corpus ---------------------------------------------------------------------------

def _unique(cases: list[Case]) -> list[Case]:
    seen: set[str] = set()
    out = []
    for c in cases:
        key = json.dumps(c.docs, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def near_misses(docs: list[dict[str, Any]], per_doc: int, seed: int) -> list[tuple[Mutation, dict[str, Any]]]:
    """``per_doc`` mutations of each document, of different categories in turn, chosen by a seeded RNG
    (hypothesis' own choice favours the first mutation listed: a dropped metadata, every time)."""
    rng = random.Random(seed)
    out = []
    turn = 0
    for doc in docs:
        by_cat: dict[str, list[Mutation]] = {}
        for m in mutations(doc):
            by_cat.setdefault(m.category, []).append(m)
        cats = sorted(by_cat)
        for k in range(per_doc):
            m = rng.choice(by_cat[cats[(turn + k) % len(cats)]])
            out.append((m, m.apply(doc)))
        turn += per_doc
    return out


def generated(n_valid: int = 100, per_doc: int = 3) -> list[Case]:
    """Valid Benchmarks and Topologies and their near-misses (a Topology comes with a Benchmark using it)."""
    benches, topos = s.valid_documents(n_valid, n_valid // 3)
    cases = [Case(f"valid-benchmark-{i}", "valid", [d]) for i, d in enumerate(benches)]
    cases += [Case(f"valid-topology-{i}", "valid", [d, s.using(d)]) for i, d in enumerate(topos)]
    for i, (m, doc) in enumerate(near_misses(benches, per_doc, seed=11)):
        cases.append(Case(f"{m.category}-benchmark-{i}", m.category, [doc], [m.where]))
    for i, (m, doc) in enumerate(near_misses(topos, per_doc, seed=12)):
        cases.append(Case(f"{m.category}-topology-{i}", m.category, [doc, s.using(doc)], [m.where]))
    return _unique(cases)


def example_mutations() -> list[Case]:
    """Every manifests/examples file unchanged, then each field of its specs changed once: dropped, given
    another type or perturbed, in turn (one change per field keeps the 45-region sweep affordable)."""
    cases: list[Case] = []
    for f in sorted(EXAMPLES.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        cases.append(Case(f"example-{f.stem}", "example", docs))
        turn = 0
        for j, doc in enumerate(docs):
            for path, v in nodes(doc):
                if path[0] != "spec":
                    continue
                options = [Mutation("perturb", path, _perturb(v))]
                options += [Mutation("wrong-type", path, w) for w in WRONG_TYPES.get(type(v), ())[:1]]
                if isinstance(path[-1], str):
                    options.append(Mutation("drop", path, DROP))
                m = options[turn % len(options)]
                turn += 1
                cases.append(Case(f"example-{f.stem}-{j}-{m.category}-{m.where}", f"example-{m.category}",
                                  [*docs[:j], m.apply(doc), *docs[j + 1:]], [m.where]))
    return _unique(cases)


def _perturb(v: Any) -> Any:
    """A nearby value of the same type: numbers ±, a unit's number changed, a name suffixed, a list shortened."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v * 2 if v > 1 else v - 1
    if _is_unit(v):
        num = "".join(c for c in v if c.isdigit() or c == ".")
        return v.replace(num, str(int(float(num) * 3 + 1)), 1)
    if isinstance(v, str):
        return f"{v}-x"
    if isinstance(v, list):
        return v[:-1]
    if isinstance(v, dict):
        return {}
    return v


def corpus() -> list[Case]:
    return generated() + example_mutations()


def planner_verdict(case: Case) -> str | None:
    """What ``wanwide plan -f FILE`` says about the case's file: None (plans) or its one-line error."""
    try:
        specs = load_texts([(f"{case.id}.yaml", case.text())])
        render_plans(specs.docs, None, False, False, specs.origin)
    except UserError as e:
        return str(e)
    return None
