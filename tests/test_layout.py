"""The tree draws the design: the core imports no provider and no pipeline, and does no I/O at import.

One plan, one lifecycle, two providers: ``core/`` decides and must not reach into what translates its
decisions (``providers/``) or what runs and reads the results (``pipeline/``); the providers never
import each other. Checked on every module's imports (module level and inside functions).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "operator" / "wanwide"
FORBIDDEN = {
    "core": ("wanwide.providers", "wanwide.pipeline", "kubernetes", "kopf", "boto3", "botocore"),
    "providers/kubernetes": ("wanwide.providers.lab",),
    "providers/lab": ("wanwide.providers.kubernetes", "kopf", "kubernetes"),
}


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out


def test_core_and_providers_import_only_what_the_design_allows():
    bad = []
    for where, banned in FORBIDDEN.items():
        for f in sorted((PKG / where).rglob("*.py")):
            for name in _imports(f):
                if any(name == b or name.startswith(b + ".") for b in banned):
                    bad.append(f"{f.relative_to(PKG)} imports {name}")
    assert bad == []


def test_every_package_says_what_it_holds():
    for init in sorted(PKG.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert len(doc.split()) >= 8, f"{init.relative_to(PKG)}: a one-word docstring ({doc!r})"


def test_the_lifecycle_speaks_no_providers_words():
    """The neutral core says what happens to a trial, not how a provider does it: no pods, nodes, Chaos Mesh,
    kubectl or helm in core/lifecycle (the providers' messages carry those)."""
    import re

    words = re.compile(r"kubectl|chaos mesh|\bcrds?\b|\bpods?\b|\bnodes?\b|helm|netem|kopf|kubernetes|operator", re.I)
    found = [f"{f.name}:{i}: {line.strip()}" for f in sorted((PKG / "core" / "lifecycle").glob("*.py"))
             for i, line in enumerate(f.read_text().splitlines(), 1) if words.search(line)]
    assert found == []
