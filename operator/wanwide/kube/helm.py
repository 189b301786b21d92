"""``helm upgrade --install`` per region — never ``--wait`` (keystone's db-sync hook would deadlock)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import yaml

from ..render.keystone import HelmRelease


class HelmError(RuntimeError):
    pass


def helm_binary() -> str:
    found = os.environ.get("WANWIDE_HELM") or shutil.which("helm")
    if not found:
        raise HelmError("helm not found: put it on PATH or set WANWIDE_HELM")
    return found


def command(rel: HelmRelease, values_file: str, kubeconfig: str | None = None) -> list[str]:
    """The exact command line (a chart repo of "" means ``chart`` is a path or an OCI reference)."""
    cmd = [helm_binary(), "upgrade", "--install", rel.name, rel.chart, "--namespace", rel.namespace,
           "--values", values_file, "--history-max", "3"]
    if rel.repo:
        cmd += ["--repo", rel.repo, "--version", rel.version]
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    return cmd


def upgrade_install(rel: HelmRelease, kubeconfig: str | None = None, timeout: float = 300) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(rel.values, f)
        path = f.name
    try:
        p = subprocess.run(command(rel, path, kubeconfig), capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise HelmError(f"helm upgrade --install {rel.name} in {rel.namespace} failed: {p.stderr.strip()[-800:]}")
    return p.stdout


def status(name: str, namespace: str, kubeconfig: str | None = None) -> str | None:
    cmd = [helm_binary(), "status", name, "--namespace", namespace, "-o", "json"]
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None
    return yaml.safe_load(p.stdout).get("info", {}).get("status")
