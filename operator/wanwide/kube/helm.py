"""``helm upgrade --install`` per region — never ``--wait`` (keystone's db-sync hook would deadlock)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time

import yaml
from prometheus_client import Counter

from ..render.keystone import HelmRelease

logger = logging.getLogger(__name__)
HELM_ERRORS = Counter("wanwide_helm_errors_total", "helm commands that failed or could not start", ["command"])


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


def status(name: str, namespace: str, kubeconfig: str | None = None) -> str | None:
    cmd = [helm_binary(), "status", name, "--namespace", namespace, "-o", "json"]
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None
    return yaml.safe_load(p.stdout).get("info", {}).get("status")


# What a helm process leaves behind when it is killed mid-operation (with the operator that ran
# it): the next ``upgrade --install`` refuses all of them ("another operation is in progress",
# "has no deployed releases"), so the release is uninstalled first and installed again.
STUCK = frozenset({"pending-install", "pending-upgrade", "pending-rollback", "uninstalling"})


def next_action(status: str | None) -> str:
    """For a release no helm process of ours is working on: "done", "reset" (uninstall, then
    install) or "install" (``upgrade --install`` copes with no release and with a failed one)."""
    if status == "deployed":
        return "done"
    return "reset" if status in STUCK else "install"


def uninstall(name: str, namespace: str, kubeconfig: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [helm_binary(), "uninstall", name, "--namespace", namespace, "--no-hooks"]
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class Background:
    """``helm upgrade --install`` blocks until the chart's hook Jobs finish (keystone's db-sync
    can take minutes): run it beside the reconcile loop and poll.

    State lives in this process only; after an operator restart the command simply runs
    again (it is idempotent), and a release a killed helm left stuck is reset first.
    """

    STALE_S = 120.0  # a waiting release not asked about for this long is forgotten (its trial moved on)

    def __init__(self, max_running: int = 8) -> None:
        self.procs: dict[str, tuple[subprocess.Popen[str], str, str]] = {}
        self.max_running = max_running
        self.waiting: dict[str, tuple[float, float]] = {}  # key -> (first asked, last asked), monotonic
        self._lock = threading.Lock()

    def my_turn(self, rel: HelmRelease, now: float | None = None) -> bool:
        """Whether ``rel`` (not ours yet) may be looked at and started now: free slots go to the releases
        that have waited longest, so no trial is starved by others asking more often."""
        t = time.monotonic() if now is None else now
        k = self.key(rel)
        with self._lock:
            self.waiting = {w: fl for w, fl in self.waiting.items() if t - fl[1] < self.STALE_S}
            self.waiting[k] = (self.waiting.get(k, (t, t))[0], t)
            free = self.max_running - self.running()
            oldest = sorted(self.waiting, key=lambda w: self.waiting[w][0])[:max(free, 0)]
            return k in oldest

    def served(self, rel: HelmRelease) -> None:
        """``rel`` no longer waits (started, or found installed)."""
        with self._lock:
            self.waiting.pop(self.key(rel), None)

    @staticmethod
    def key(rel: HelmRelease) -> str:
        return f"{rel.namespace}/{rel.name}"

    def running(self) -> int:
        return sum(p.poll() is None for p, _, _ in self.procs.values())

    def observe(self, rel: HelmRelease, kubeconfig: str | None = None) -> str:
        """'running' (our helm works on it), 'done', 'install' or 'reset' (see :func:`next_action`).

        Raises HelmError when our helm process for it failed (once: the failure is consumed).
        """
        k = self.key(rel)
        if k not in self.procs:
            return next_action(status(rel.name, rel.namespace, kubeconfig))
        proc, values, log = self.procs[k]
        if proc.poll() is None:
            return "running"
        del self.procs[k]
        with open(log) as fh:
            text = fh.read()
        for p in (values, log):
            os.unlink(p)
        if proc.returncode != 0:
            HELM_ERRORS.labels("upgrade").inc()
            raise HelmError(f"helm upgrade --install {rel.name} in {rel.namespace} failed: {text.strip()[-800:]}")
        return "done"

    def start(self, rel: HelmRelease, kubeconfig: str | None = None, timeout_s: float = 1800,
              reset: bool = False) -> bool:
        """Start ``helm upgrade --install`` (after uninstalling a stuck release when ``reset``).

        False when it did not start: at most ``max_running`` helm processes at once, or the
        uninstall failed (logged); the next observation asks again, the phase timeout bounds it.
        """
        k = self.key(rel)
        if k in self.procs or self.running() >= self.max_running:
            return False
        if reset:
            u = uninstall(rel.name, rel.namespace, kubeconfig)
            if u.returncode != 0:
                HELM_ERRORS.labels("uninstall").inc()
                logger.warning("helm uninstall of the stuck release %s failed (tried again): %s", k, u.stderr.strip()[-400:])
                return False
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump(rel.values, f)
        log = f.name + ".log"
        try:
            cmd = command(rel, f.name, kubeconfig) + ["--timeout", f"{int(timeout_s)}s"]
            with open(log, "w") as out:  # the child keeps its own descriptor
                self.procs[k] = (subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True), f.name, log)
            self.served(rel)
        except (HelmError, OSError) as e:
            HELM_ERRORS.labels("upgrade").inc()
            for p in (f.name, log):
                if os.path.exists(p):
                    os.unlink(p)
            raise HelmError(f"helm upgrade --install {rel.name} in {rel.namespace} could not start: {e}") from e
        return True

    def poll(self, rel: HelmRelease, kubeconfig: str | None = None, timeout_s: float = 1800) -> str:
        """Observe, and start helm when the release needs it: 'running', 'done', or raises HelmError."""
        state = self.observe(rel, kubeconfig)
        if state in ("install", "reset"):
            self.start(rel, kubeconfig, timeout_s, reset=state == "reset")
            return "running"
        return state


BACKGROUND = Background()
