"""``helm template`` of each region's release, in the background, cached; nothing is installed by helm.

The operator applies the rendered objects itself (:mod:`..render.chart`: Argo CD's way), so helm only
renders: offline, ~0.1 s of CPU per release, a few at once. A chart from a repository (or an OCI
reference) is pulled once per chart and version into a local cache. Only the sources the operator's
setting allows are pulled or rendered (:mod:`..render.chartsource`; checked again here, on the resolved
path), ``--`` ends helm's flags before the release and chart, a chart from a repository is verified
against the setting's keyring when one is given, and helm's output is read up to ``MAX_OUTPUT`` bytes.
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
from wanwide.providers.kubernetes.render import chartsource
from wanwide.providers.kubernetes.render.chart import (
    Chart,
    ChartError,
    ChartRefused,
    documents,
    patched,
    stages,
)
from wanwide.providers.kubernetes.render.keystone import HelmRelease

logger = logging.getLogger(__name__)
CHART_ERRORS = Counter("wanwide_chart_errors_total",
                       "Keystone chart steps that failed: template (helm template or pull), hook (a hook Job failed), "
                       "refused (the chart's source or what it renders is not allowed)",
                       ["step"])


MAX_OUTPUT = 32 * 1024 * 1024  # bytes of one ``helm template`` (the keystone chart renders ~200 kB)


class HelmError(TransientError, RuntimeError):
    pass


class Policy:
    """The operator's chart settings: the allowed sources and the keyring that verifies pulled charts."""

    def __init__(self, allowed: tuple[str, ...] = chartsource.DEFAULT_ALLOWED, keyring: str | None = None) -> None:
        self.allowed, self.keyring = tuple(allowed), keyring


def helm_binary() -> str:
    found = os.environ.get("WANWIDE_HELM") or shutil.which("helm")
    if not found:
        raise HelmError("helm not found: put it on PATH or set WANWIDE_HELM")
    return found


def command(rel: HelmRelease, chart: str) -> list[str]:
    """``helm template``: the release's objects, hooks included; offline (helm's default capabilities). The
    values (passwords among them) go through its stdin, never a file: an operator killed mid-render would
    leave the file in its /tmp, an emptyDir that outlives the container. ``--`` before the release and the
    chart: neither is ever read as a flag."""
    return [helm_binary(), "template", "--namespace", rel.namespace, "--values", "-", "--", rel.name, chart]


def pull_command(rel: HelmRelease, dest: str, keyring: str | None) -> list[str]:
    """``helm pull`` of a release's chart into ``dest``, verified against ``keyring`` when given."""
    cmd = [helm_binary(), "pull", "--version", rel.version, "--destination", dest]
    if rel.repo:
        cmd += ["--repo", rel.repo]
    if keyring:
        cmd += ["--verify", "--keyring", keyring]
    return [*cmd, "--", rel.chart]


def _run(cmd: list[str], what: str, timeout: float = 300, stdin: str | None = None) -> str:
    """helm's stdout (at most MAX_OUTPUT bytes, or HelmError); its own words when it fails."""
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            p = subprocess.run(cmd, stdout=out, stderr=err, timeout=timeout,
                               **({"input": stdin.encode()} if stdin is not None else {"stdin": subprocess.DEVNULL}))
            size = out.seek(0, os.SEEK_END)
            if size > MAX_OUTPUT:
                raise ChartRefused(f"{what} wrote {size} bytes, more than {MAX_OUTPUT}: not read")
            out.seek(0)
            err.seek(0)
            text, said = out.read().decode(errors="replace"), err.read(64 * 1024).decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HelmError(f"{what} could not run: {e}") from e
    if p.returncode != 0:
        raise HelmError(f"{what} failed: {(said or text).strip()[-800:]}")
    return text


class Renders:
    """Rendered releases by values digest, made by a few ``helm template`` processes beside the reconcile loop.

    :meth:`get` never blocks on helm: it answers with the release's :class:`Chart`, None while it is
    being rendered, or raises the render's :class:`HelmError` once (the next ``get`` renders again).
    Entries not asked for in ``IDLE_S`` are dropped (their trial moved on).
    """

    IDLE_S = 600.0

    def __init__(self, workers: int = 4, cache_dir: str | None = None, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="helm-template")
        self.cache_dir = Path(cache_dir or os.path.join(tempfile.gettempdir(), "wanwide-charts"))
        self.done: dict[str, tuple[float, Chart]] = {}
        self.running: dict[str, Future[Chart]] = {}
        self._lock = threading.Lock()
        self._pulls: dict[str, threading.Lock] = {}

    @staticmethod
    def key(rel: HelmRelease, labels: dict[str, str], also: tuple[str, ...] = ()) -> str:
        return rel.digest + json.dumps([labels, also], sort_keys=True)

    def get(self, rel: HelmRelease, labels: dict[str, str], also: tuple[str, ...] = ()) -> Chart | None:
        """The release rendered and confined (``also``: namespaces its dependency-check Roles may go to)."""
        k = self.key(rel, labels, also)
        now = time.monotonic()
        with self._lock:
            if k in self.done:
                self.done[k] = (now, self.done[k][1])
                return self.done[k][1]
            fut = self.running.get(k)
            if fut is None:
                self.running[k] = self.pool.submit(self.render, rel, labels, also)
                return None
            if not fut.done():
                return None
            del self.running[k]
            self.done = {d: v for d, v in self.done.items() if now - v[0] < self.IDLE_S}
            chart = fut.result()  # raises the render's error (counted), once
            self.done[k] = (now, chart)
            return chart

    def render(self, rel: HelmRelease, labels: dict[str, str], also: tuple[str, ...] = ()) -> Chart:
        """Rendered and confined; ChartError (permanent: the chart renders what wanwide does not apply, or its
        source is not allowed) or HelmError (helm failed: tried again)."""
        try:
            text = _run(command(rel, self.chart_path(rel)), f"helm template {rel.name} in {rel.namespace}",
                        stdin=yaml.safe_dump(rel.values))
            return stages(patched(documents(text), rel.patches), rel.name, rel.namespace, labels, also)
        except ChartError:
            CHART_ERRORS.labels("refused").inc()
            raise
        except (HelmError, yaml.YAMLError) as e:
            CHART_ERRORS.labels("template").inc()
            raise HelmError(str(e)) from e

    def chart_path(self, rel: HelmRelease) -> str:
        """A local path of the chart: itself, or the archive pulled (once) from its repository or registry.
        Refused (ChartRefused) unless the policy allows its source; a local path once its links are resolved."""
        bad = chartsource.problem(rel.repo, rel.chart, rel.version, self.policy.allowed)
        if bad is not None:
            raise ChartRefused(f"{rel.field}.{bad[0]}: {bad[1]}")
        if not rel.repo and not rel.chart.startswith("oci://"):
            real = os.path.realpath(rel.chart)
            if not chartsource.allowed(real, self.policy.allowed):
                raise ChartRefused(f"{rel.field}.chart: {rel.chart} resolves to {real}, not a chart "
                                   f"source this operator renders: {chartsource.FIX}")
            return real
        digest = hashlib.sha256(f"{rel.repo} {rel.chart} {rel.version} {self.policy.keyring}".encode()).hexdigest()[:16]
        dest = self.cache_dir / digest
        with self._lock:
            lock = self._pulls.setdefault(digest, threading.Lock())
        with lock:
            found = sorted(dest.glob("*.tgz")) if dest.is_dir() else []
            if not found:
                tmp = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=self._mkdir()))
                _run(pull_command(rel, str(tmp), self.policy.keyring), f"helm pull {rel.chart} {rel.version}")
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
