"""Spec files as the command line reads them: every mistake is a UserError of one line naming the file.

Missing or unreadable files, YAML syntax errors (``file:line:column``), documents that are
not mappings, unknown kinds and invalid specs (``file:line: Benchmark/name: field.path: what to do``).
Objects of other APIs (a ``v1`` Secret kept beside the Benchmark) are skipped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wanwide.core.api.benchmark import Benchmark
from wanwide.core.errors import UserError, UserErrors, one_line
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.load import Documents, parse_benchmark, parse_topology

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
    """The file's text (``-``: standard input)."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; expected a YAML file") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}); expected a YAML file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None


def yaml_documents(name: str, text: str) -> list[tuple[int, Any]]:
    """(line where it starts, value) of each YAML document; syntax errors as ``name:line:col``."""
    loader = yaml.SafeLoader(text)
    out: list[tuple[int, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            out.append((node.start_mark.line + 1, loader.construct_document(node)))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        ctx = e.context or ""
        if ctx and e.context_mark is not None and e.context_mark is not mark:
            ctx += f" (at {e.context_mark.line + 1}:{e.context_mark.column + 1})"
        what = one_line(", ".join(p for p in (ctx, e.problem) if p))
        raise UserError(f"{where}: YAML syntax error: {what}") from None
    except yaml.YAMLError as e:
        raise UserError(f"{name}: YAML error: {one_line(str(e))}") from None
    finally:
        loader.dispose()
    return out


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
    return specs


def plan_problems(e: PlanError) -> str:
    """Every problem of ``e`` on one line."""
    return one_line("; ".join(str(p) for p in e.problems)) or "invalid spec"


def problem_lines(where: str, e: PlanError) -> list[str]:
    """Every problem of ``e``, one line each, each naming ``where`` (the file and document)."""
    return [f"{where}: {one_line(str(p))}" for p in e.problems] or [f"{where}: invalid spec"]
