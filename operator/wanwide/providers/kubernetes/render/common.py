"""Small builders shared by the renderers."""

from __future__ import annotations

from typing import Any

PLACEHOLDER = "<set-by-operator-at-apply>"


def meta(
    name: str,
    namespace: str | None,
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name}
    if namespace is not None:
        m["namespace"] = namespace
    m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    return m


def obj(api_version: str, kind: str, metadata: dict[str, Any], **body: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    out.update(body)
    return out


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` wins; nested dicts merge; lists and scalars are replaced."""
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def svc_host(name: str, namespace: str) -> str:
    return f"{name}.{namespace}.svc.cluster.local"
