"""Field reference (Markdown) generated from the CRD schemas, hence from the models."""

from __future__ import annotations

import json
from typing import Any

from wanwide.crds import crds


def _type(node: dict[str, Any]) -> str:
    t = node.get("type", "any")
    if t == "array":
        return f"[]{_type(node.get('items', {}))}"
    if t == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"map[string]{_type(node['additionalProperties'])}"
    if "enum" in node:
        return " \\| ".join(str(v) for v in node["enum"])
    return t


def _rows(node: dict[str, Any], path: str, required: bool, out: list[str]) -> None:
    desc = node.get("description", "").replace("|", "\\|").replace("\n", " ")
    rules = [r["message"] for r in node.get("x-kubernetes-validations", [])]
    limits = []
    for k in ("minimum", "maximum", "minItems", "maxItems", "maxLength", "pattern"):
        if k in node:
            limits.append(f"{k} {node[k]}")
    default = json.dumps(node["default"]) if "default" in node else ""
    notes = "; ".join([desc, *limits, *rules]).strip("; ").replace("|", "\\|")
    out.append(f"| `{path}` | {_type(node)} | {'yes' if required else ''} | {default.replace('|', '/')} | {notes} |")
    req = set(node.get("required", []))
    for name, sub in node.get("properties", {}).items():
        _rows(sub, f"{path}.{name}", name in req, out)
    if node.get("type") == "array" and "properties" in node.get("items", {}):
        for name, sub in node["items"]["properties"].items():
            _rows(sub, f"{path}[].{name}", name in set(node["items"].get("required", [])), out)


def reference() -> str:
    lines = ["# Field reference", "", "Generated from the pydantic models (`python -m wanwide.docs`). Do not edit.", ""]
    for crd in crds():
        kind = crd["spec"]["names"]["kind"]
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        lines += [f"## {kind} (`wanwide.io/v1alpha1`)", "", "| field | type | required | default | notes |",
                  "|---|---|---|---|---|"]
        _rows(schema["properties"]["spec"], "spec", True, lines)
        lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
