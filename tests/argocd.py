"""Argo CD's verdict on wanwide objects: Argo CD's own health test command on the argocd-cm health scripts.

``hack/argocd.sh cli`` builds the argocd CLI from the Go module proxy (once, cached);
``argocd admin settings resource-overrides health OBJECT --argocd-cm-path CM`` runs the script the
ConfigMap gives the object's kind exactly as the application controller does (util/lua, gopher-lua,
Lua 5.1 with only the base, table and package libraries), offline.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CM_PATCH = ROOT / "manifests" / "argocd" / "argocd-cm-patch.yaml"
SCRIPT = ROOT / "hack" / "argocd.sh"


@functools.cache
def argocd(what: str) -> str:
    """``hack/argocd.sh cli`` (the argocd binary) or ``module`` (Argo CD's module directory)."""
    return subprocess.run([str(SCRIPT), what], check=True, capture_output=True, text=True,
                          timeout=3600).stdout.strip()


def script(kind: str) -> str:
    """The health script argocd-cm-patch.yaml gives a wanwide kind."""
    return yaml.safe_load(CM_PATCH.read_text())["data"][f"resource.customizations.health.wanwide.io_{kind}"]


def argocd_cm(data: dict[str, str] | None = None) -> dict[str, Any]:
    """The argocd-cm ConfigMap the patch is merged into (a fresh install's is empty)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", "namespace": "argocd",
                         "labels": {"app.kubernetes.io/part-of": "argocd"}},
            "data": yaml.safe_load(CM_PATCH.read_text())["data"] if data is None else data}


def _one(cm: Path, obj: dict[str, Any], tmp: Path, i: int) -> tuple[str, str]:
    path = tmp / f"obj-{i}.json"
    path.write_text(json.dumps(obj))  # JSON: a YAML 1.1 reader takes an unquoted key such as n for false
    p = subprocess.run([argocd("cli"), "admin", "settings", "resource-overrides", "health", str(path),
                        "--argocd-cm-path", str(cm)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"{obj['kind']}/{obj['metadata'].get('name')}: {p.stdout}{p.stderr}"
    if "Health script is not configured" in p.stdout:
        return "", "no health script"
    status = re.search(r"^STATUS: ?(.*)$", p.stdout, re.M)
    message = re.search(r"^MESSAGE: ?(.*)$", p.stdout, re.M)
    assert status, f"{obj['kind']}: no verdict from argocd: {p.stdout}{p.stderr}"
    return status[1].strip(), (message[1].strip() if message else "")


def healths(objs: list[dict[str, Any]], data: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(status, message) Argo CD gives each wanwide object (kind from the object)."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cm = tmp / "argocd-cm.yaml"
        cm.write_text(json.dumps(argocd_cm(data)))
        objs = [{"apiVersion": "wanwide.io/v1alpha1", **o} for o in objs]
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(lambda a: _one(cm, a[1], tmp, a[0]), enumerate(objs)))


def health(obj: dict[str, Any]) -> tuple[str, str]:
    return healths([obj])[0]
