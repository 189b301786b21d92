"""Argo CD's verdict on wanwide objects: the argocd-cm health scripts run as Argo CD runs them.

``hack/argocd.sh luacheck`` builds hack/luacheck (gopher-lua at the version Argo CD pins,
objects converted to Lua tables the way Argo CD's util/lua does); every call here is one
``luacheck -lines`` process for any number of objects.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CM_PATCH = ROOT / "manifests" / "argocd" / "argocd-cm-patch.yaml"
SCRIPT = ROOT / "hack" / "argocd.sh"


@functools.cache
def argocd(what: str) -> str:
    """``hack/argocd.sh luacheck`` (the binary) or ``module`` (Argo CD's module directory)."""
    return subprocess.run([str(SCRIPT), what], check=True, capture_output=True, text=True,
                          timeout=900).stdout.strip()


def script(kind: str) -> str:
    """The health script argocd-cm-patch.yaml gives a wanwide kind."""
    return yaml.safe_load(CM_PATCH.read_text())["data"][f"resource.customizations.health.wanwide.io_{kind}"]


def run(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``{"script", "object", "openLibs"}`` jobs -> ``{"health": …}`` or ``{"error": …}`` each."""
    if not jobs:
        return []
    p = subprocess.run([argocd("luacheck"), "-lines"], input="".join(json.dumps(j) + "\n" for j in jobs),
                       capture_output=True, text=True, check=True, timeout=300)
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(jobs), p.stderr
    return out


def healths(objs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(status, message) Argo CD gives each wanwide object (kind from the object)."""
    out = []
    for obj, r in zip(objs, run([{"script": script(o["kind"]), "object": o} for o in objs]), strict=True):
        assert "error" not in r, f"{obj['kind']}/{obj['metadata'].get('name')}: Lua error {r['error']}"
        h = r["health"] or {}
        out.append((h.get("status", ""), h.get("message", "")))
    return out


def health(obj: dict[str, Any]) -> tuple[str, str]:
    return healths([obj])[0]
