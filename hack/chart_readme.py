#!/usr/bin/env python3
"""charts/wanwide/README.md from README.md.tmpl and the ``# --`` comments of values.yaml.

    hack/chart_readme.py          # rewrite the README
    hack/chart_readme.py --check  # exit 1 when it is stale (tests/test_chart_docs.py does the same)

The comment convention is helm-docs': ``# -- text`` documents the key on the next line.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

CHART = Path(__file__).resolve().parents[1] / "charts" / "wanwide"
KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_]+):(?P<rest>.*)$")
DOC = re.compile(r"^\s*# -- (?P<text>.*)$")


def documented(values_text: str) -> dict[str, str]:
    """Dotted key -> description, for every key preceded by a ``# --`` comment."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending: str | None = None
    for line in values_text.splitlines():
        if m := DOC.match(line):
            pending = m["text"] if pending is None else f"{pending} {m['text']}"
            continue
        m = KEY.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m["key"]))
        if pending is not None:
            out[".".join(k for _, k in stack)] = pending
            pending = None
    return out


def _lookup(values: dict, dotted: str) -> object:
    node: object = values
    for part in dotted.split("."):
        node = node[part]  # type: ignore[index]
    return node


def _type(v: object) -> str:
    return {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "object"}.get(
        type(v), "null")


def table(values_text: str) -> str:
    values = yaml.safe_load(values_text)
    rows = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    for key, text in documented(values_text).items():
        v = _lookup(values, key)
        default = json.dumps(v, separators=(", ", ": "))
        rows.append(f"| `{key}` | {_type(v)} | `{default}` | {text} |")
    return "\n".join(rows)


def render(chart: Path = CHART) -> str:
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    text = (chart / "README.md.tmpl").read_text()
    for k in ("version", "appVersion", "description"):
        text = text.replace("{{ " + k + " }}", str(meta[k]))
    return text.replace("{{ values }}", table((chart / "values.yaml").read_text()))


def main(argv: list[str]) -> int:
    want = render()
    path = CHART / "README.md"
    if "--check" in argv:
        if not path.exists() or path.read_text() != want:
            print(f"{path} is stale: run hack/chart_readme.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(want)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
