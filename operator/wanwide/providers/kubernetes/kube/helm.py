"""``helm template`` of each region's release, in the background, cached; nothing is installed by helm.

The operator applies the rendered objects itself (:mod:`..render.chart`: Argo CD's way), so helm only
renders: offline, ~0.1 s of CPU per release, a few at once. A chart from a repository (or an OCI
reference) is pulled once per chart and version into a local cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import yaml
from prometheus_client import Counter

from wanwide.core.errors import TransientError
from wanwide.providers.kubernetes.render.chart import Chart, ChartError, documents, stages
from wanwide.providers.kubernetes.render.keystone import HelmRelease

logger = logging.getLogger(__name__)
CHART_ERRORS = Counter("wanwide_chart_errors_total",
                       "Keystone chart steps that failed: template (helm template or pull), hook (a hook Job failed)",
                       ["step"])


class HelmError(TransientError, RuntimeError):
    pass


def helm_binary() -> str:
    found = os.environ.get("WANWIDE_HELM") or shutil.which("helm")
    if not found:
        raise HelmError("helm not found: put it on PATH or set WANWIDE_HELM")
    return found


def command(rel: HelmRelease, chart: str) -> list[str]:
    """``helm template``: the release's objects, hooks included; offline (helm's default capabilities). The
    values (passwords among them) go through its stdin, never a file: an operator killed mid-render would
    leave the file in its /tmp, an emptyDir that outlives the container."""
    return [helm_binary(), "template", rel.name, chart, "--namespace", rel.namespace, "--values", "-"]


def _run(cmd: list[str], what: str, timeout: float = 300, stdin: str | None = None) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HelmError(f"{what} could not run: {e}") from e
    if p.returncode != 0:
        raise HelmError(f"{what} failed: {(p.stderr or p.stdout).strip()[-800:]}")
    return p.stdout


class Renders:
    """Rendered releases by values digest, made by a few ``helm template`` processes beside the reconcile loop.

    :meth:`get` never blocks on helm: it answers with the release's :class:`Chart`, None while it is
    being rendered, or raises the render's :class:`HelmError` once (the next ``get`` renders again).
    Entries not asked for in ``IDLE_S`` are dropped (their trial moved on).
    """

    IDLE_S = 600.0

    def __init__(self, workers: int = 4, cache_dir: str | None = None) -> None:
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="helm-template")
        self.cache_dir = Path(cache_dir or os.path.join(tempfile.gettempdir(), "wanwide-charts"))
        self.done: dict[str, tuple[float, Chart]] = {}
        self.running: dict[str, Future[Chart]] = {}
        self._lock = threading.Lock()
        self._pulls: dict[str, threading.Lock] = {}

    @staticmethod
    def key(rel: HelmRelease, labels: dict[str, str]) -> str:
        return rel.digest + json.dumps(labels, sort_keys=True)

    def get(self, rel: HelmRelease, labels: dict[str, str]) -> Chart | None:
        k = self.key(rel, labels)
        now = time.monotonic()
        with self._lock:
            if k in self.done:
                self.done[k] = (now, self.done[k][1])
                return self.done[k][1]
            fut = self.running.get(k)
            if fut is None:
                self.running[k] = self.pool.submit(self.render, rel, labels)
                return None
            if not fut.done():
                return None
            del self.running[k]
            self.done = {d: v for d, v in self.done.items() if now - v[0] < self.IDLE_S}
            chart = fut.result()  # raises the render's error (counted), once
            self.done[k] = (now, chart)
            return chart

    def render(self, rel: HelmRelease, labels: dict[str, str]) -> Chart:
        try:
            text = _run(command(rel, self.chart_path(rel)), f"helm template {rel.name} in {rel.namespace}",
                        stdin=yaml.safe_dump(rel.values))
            return stages(documents(text), rel.name, rel.namespace, labels)
        except (HelmError, ChartError, yaml.YAMLError) as e:
            CHART_ERRORS.labels("template").inc()
            raise HelmError(str(e)) from e

    def chart_path(self, rel: HelmRelease) -> str:
        """A local path of the chart: itself, or the archive pulled (once) from its repository or registry."""
        if not rel.repo and not rel.chart.startswith("oci://"):
            return rel.chart
        digest = hashlib.sha256(f"{rel.repo} {rel.chart} {rel.version}".encode()).hexdigest()[:16]
        dest = self.cache_dir / digest
        with self._lock:
            lock = self._pulls.setdefault(digest, threading.Lock())
        with lock:
            found = sorted(dest.glob("*.tgz")) if dest.is_dir() else []
            if not found:
                tmp = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=self._mkdir()))
                cmd = [helm_binary(), "pull", rel.chart, "--version", rel.version, "--destination", str(tmp)]
                if rel.repo:
                    cmd += ["--repo", rel.repo]
                _run(cmd, f"helm pull {rel.chart} {rel.version}")
                shutil.rmtree(dest, ignore_errors=True)
                tmp.rename(dest)
                found = sorted(dest.glob("*.tgz"))
            if not found:
                raise HelmError(f"helm pull {rel.chart} {rel.version} left no chart archive")
            return str(found[0])

    def _mkdir(self) -> Path:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        return self.cache_dir


RENDERS = Renders()
