"""Spec files as the command line reads them: every mistake is a UserError of one line naming the file.

Missing or unreadable files, YAML syntax errors (``file:line:column``), documents that are
not mappings, unknown kinds and invalid specs (``file:line: Benchmark/name: field.path: what to do``).
Objects of other APIs (a ``v1`` Secret kept beside the Benchmark) are skipped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from wanwide.core.api.benchmark import Benchmark
from wanwide.core.errors import UserError, UserErrors, one_line
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.load import Documents, parse_benchmark, parse_topology
from wanwide.core.plan.yamldocs import documents, read_bounded

KNOWN_KINDS = ("Benchmark", "Topology")
API_GROUP = "wanwide.io"


@dataclass
class Specs:
    """The Topologies and Benchmarks of some files, and where each Benchmark was written."""

    docs: Documents
    where: dict[int, str] = field(default_factory=dict)  # id(Benchmark) -> "file:line"

    def origin(self, bench: Benchmark) -> str:
        return self.where.get(id(bench), "<input>")


def read_text(path: str) -> str:
    """The file's text (``-``: standard input), at most 3 MiB (the API server's largest request)."""
    if path == "-":
        return read_bounded(sys.stdin.buffer, "<stdin>")
    try:
        with open(path, "rb") as fh:
            return read_bounded(fh, path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; expected a YAML file") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None


def yaml_documents(name: str, text: str) -> list[tuple[int, Any]]:
    """(line where it starts, value) of each YAML document; syntax errors as ``name:line:col``, documents
    over a bound (size, depth, aliases: core/plan/yamldocs.py) as ``name:line``."""
    return documents(name, text)


def _type_name(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "value")


def load_files(paths: list[str]) -> Specs:
    """Every Topology and Benchmark in ``paths``; a UserError naming all problems found."""
    return load_texts([("<stdin>" if p == "-" else p, read_text(p)) for p in paths])


def load_texts(texts: list[tuple[str, str]]) -> Specs:
    """Every Topology and Benchmark in (file name, YAML text) pairs, as ``load_files`` reads them."""
    specs = Specs(Documents({}, []))
    problems: list[str] = []
    for name, text in texts:
        for line, doc in yaml_documents(name, text):
            where = f"{name}:{line}"
            if doc is None:
                continue
            if not isinstance(doc, dict):
                problems.append(f"{where}: the document is a {_type_name(doc)}; expected a mapping with "
                                f"kind: {' or '.join(KNOWN_KINDS)} (separate several documents with ---)")
                continue
            kind, api = doc.get("kind"), str(doc.get("apiVersion") or "")
            if kind not in KNOWN_KINDS and api and not api.startswith(f"{API_GROUP}/"):
                continue  # another API's object (a Secret beside the Benchmark): kubectl's business
            if kind not in KNOWN_KINDS:
                problems.append(f"{where}: unknown kind {kind!r}; known kinds: {', '.join(KNOWN_KINDS)}")
                continue
            try:
                if kind == "Topology":
                    t = parse_topology(doc)
                    specs.docs.topologies[(t.metadata.namespace, t.metadata.name)] = t
                else:
                    b = parse_benchmark(doc)
                    specs.docs.benchmarks.append(b)
                    specs.where[id(b)] = where
            except PlanError as e:
                problems += problem_lines(where, e)
    if problems:
        raise UserErrors(problems)
    if not specs.docs.benchmarks:
        found = f"{len(specs.docs.topologies)} Topology" if specs.docs.topologies else "nothing"
        raise UserError(f"{', '.join(n for n, _ in texts)}: no Benchmark document (found {found})")
    if (why := run_problem(specs.docs)) is not None:
        raise UserError(f"{', '.join(n for n, _ in texts)}: {why}")
    return specs


def run_problem(docs: Documents) -> str | None:
    """Why one run may not plan all these Benchmarks together: what one Benchmark may plan (core/api/limits.py)
    holds for a run too, so a file of many Benchmarks costs no more than the largest one may. None: it may.
    A Benchmark over a cap on its own is left to the planner, which names its field."""
    from wanwide.core.api import limits
    from wanwide.core.plan.trial import topology_regions

    regions = links = 0
    for bench in docs.benchmarks:
        try:
            topology = docs.topology_for(bench)
        except PlanError:
            continue  # the planner says which Topology is missing
        b = limits.budget(bench.spec, topology_regions(topology))
        if limits.budget_problems(b):
            return None
        regions += b.region_trials or 0
        links += b.link_windows or 0
    n = len(docs.benchmarks)
    if regions > limits.MAX_REGION_TRIALS:
        return (f"the {n} Benchmarks' trials have {regions:,} regions in all, more than {limits.MAX_REGION_TRIALS:,} "
                "in one run (as in one Benchmark): plan them in separate runs, a file each")
    if links > limits.MAX_LINK_WINDOWS:
        return (f"the {n} Benchmarks' trials shape {links:,} directed links in all (once for each WAN and once "
                f"per fault window), more than {limits.MAX_LINK_WINDOWS:,} in one run (as in one Benchmark): plan "
                "them in separate runs, a file each")
    return None


def plan_problems(e: PlanError) -> str:
    """Every problem of ``e`` on one line."""
    return one_line("; ".join(str(p) for p in e.problems)) or "invalid spec"


def problem_lines(where: str, e: PlanError) -> list[str]:
    """Every problem of ``e``, one line each, each naming ``where`` (the file and document)."""
    return [f"{where}: {one_line(str(p))}" for p in e.problems] or [f"{where}: invalid spec"]
