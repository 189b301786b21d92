"""Thin wrappers around the ``rally`` command line (Rally lives in its own venv).

Every call uses a private config file (SQLite database in the run's work dir) and a
private HOME so that several runners on one machine never share Rally state.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wanwide.core.contracts import KeystoneSettings
from wanwide.core.errors import PermanentError

REDACTED = "<redacted>"


class RallyError(PermanentError, RuntimeError):
    """A rally command failed; ``log`` names the file holding its output."""

    def __init__(self, message: str, log: Path | None = None):
        super().__init__(message + (f" (output in {log})" if log else ""))
        self.log = log


def default_rally_paths() -> list[Path]:
    cache = Path(os.environ.get("WANWIDE_CACHE") or Path.home() / ".cache" / "wanwide")
    return [cache / "venvs" / "rally" / "bin" / "rally"]


def find_rally() -> Path:
    """``$WANWIDE_RALLY``, else ``rally`` on PATH, else the lab's venv."""
    env = os.environ.get("WANWIDE_RALLY")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise RallyError(f"WANWIDE_RALLY={env} is not an executable file")
        return p
    w = shutil.which("rally")
    if w:
        return Path(w)
    for p in default_rally_paths():
        if p.is_file() and os.access(p, os.X_OK):
            return p
    raise RallyError(
        "rally not found: set WANWIDE_RALLY, put rally on PATH, or run hack/install-lab.sh "
        f"(expected {default_rally_paths()[0]})"
    )


def rally_versions(rally: Path) -> dict[str, str]:
    """Versions of rally and rally-openstack installed next to the executable."""
    py = rally.parent / "python"
    if not py.exists():
        py = Path(sys.executable)
    code = (
        "import json\nfrom importlib import metadata as m\nout={}\n"
        "for n in ('rally','rally-openstack','python-keystoneclient','keystoneauth1'):\n"
        "    try: out[n]=m.version(n)\n"
        "    except Exception: pass\n"
        "print(json.dumps(out))"
    )
    try:
        r = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=60)
        return json.loads(r.stdout) if r.returncode == 0 else {}
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}


@dataclass
class Rally:
    """One private Rally installation state (db, env) under ``workdir``."""

    exe: Path
    workdir: Path
    logdir: Path
    env_name: str = "wanwide"
    extra_env: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    secrets: set[str] = field(default_factory=set)  # values never written to a log (`env create` prints its spec)
    openstack: dict[str, float] = field(default_factory=dict)  # rally.conf's [openstack] (its server poll options)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.home = self.workdir / "home"
        self.home.mkdir(exist_ok=True)
        self.conf = self.workdir / "rally.conf"
        db = (self.workdir / "rally.sqlite").resolve()
        # Rally logs (incl. the ITER progress lines) go to its stderr, captured per command.
        opts = "".join(f"{k} = {v:g}\n" for k, v in sorted(self.openstack.items()))
        self.conf.write_text(f"[DEFAULT]\n[database]\nconnection = sqlite:///{db}\n" + (f"[openstack]\n{opts}" if opts else ""))

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env["HOME"] = str(self.home)
        env.update(self.extra_env)
        return env

    def redact(self, text: str) -> str:
        for v in sorted(filter(None, self.secrets), key=len, reverse=True):
            text = text.replace(v, REDACTED)
        return text

    def run(
        self,
        name: str,
        *args: str,
        timeout: float = 600,
        check: bool = True,
        on_line: Callable[[str], None] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``rally --config-file CONF ARGS``; output goes to logs/NN-name.log."""
        self.calls += 1
        log = self.logdir / f"{self.calls:02d}-{name}.log"
        cmd = [str(self.exe), "--config-file", str(self.conf), *args]
        with log.open("w") as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=self._env(),
                cwd=self.workdir,
            )
            out: list[str] = []
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                assert proc.stdout is not None
                for raw in proc.stdout:
                    line = self.redact(raw)
                    fh.write(line)
                    fh.flush()
                    out.append(line)
                    if on_line:
                        on_line(line)
                rc = proc.wait()
            finally:
                timer.cancel()
            fh.write(f"# exit {rc}\n")
        cp = subprocess.CompletedProcess(cmd, rc, "".join(out), "")
        if check and rc != 0:
            tail = "".join(out[-5:]).strip()
            raise RallyError(f"rally {' '.join(args[:3])} exited {rc}: {tail[-500:]}", log)
        return cp

    # ------------------------------------------------------------ steps
    def db_create(self) -> None:
        self.run("db-ensure", "db", "ensure", timeout=120)

    def env_create(self, ks: KeystoneSettings, password: str, insecure: bool = True,
                   users: list[dict[str, str]] | None = None) -> None:
        spec = {
            "existing@openstack": {
                "auth_url": ks.url,
                "region_name": ks.region_name,
                "endpoint_type": "public",
                "https_insecure": insecure,
                "admin": {
                    "username": ks.username,
                    "password": password,
                    "user_domain_name": ks.user_domain_name,
                    "project_name": ks.project_name,
                    "project_domain_name": ks.project_domain_name,
                },
                **({"users": users} if users else {}),
            }
        }
        self.secrets |= {password} | {u["password"] for u in users or [] if u.get("password")}
        spec_path = self.workdir / "env-spec.json"  # holds the password: never in the bundle
        spec_path.write_text(json.dumps(spec, indent=2))
        spec_path.chmod(0o600)
        self.run("env-create", "env", "create", "--name", self.env_name, "--spec", str(spec_path), timeout=180)

    def env_check(self) -> None:
        self.run("env-check", "env", "check", self.env_name, timeout=180)

    def task_start(
        self, task_file: Path, tag: str, timeout: float, on_line: Callable[[str], None] | None = None
    ) -> tuple[str | None, int]:
        """Start the task; returns (task uuid or None, exit code). Never raises on rc != 0."""
        cp = self.run(
            "task-start",
            "task", "start", str(task_file), "--env", self.env_name, "--tag", tag,
            timeout=timeout, check=False, on_line=on_line,
        )
        # the task's own "started" line first: `rally task list` loads every plugin again, and on a machine whose
        # CPU the load saturates (9 regions' Rallies at once) it outlived its timeout with the task done
        uuid = _uuid_from_output(cp.stdout, tag) or self.task_uuid(tag)
        return uuid, cp.returncode

    def task_uuid(self, tag: str) -> str | None:
        cp = self.run("task-list", "task", "list", "--env", self.env_name, "--tag", tag, "--uuids-only",
                      timeout=120, check=False)
        uuids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", cp.stdout)
        return uuids[-1] if uuids else None

    def task_report_json(self, uuid: str, out: Path) -> None:
        self.run("task-report", "task", "report", uuid, "--json", "--out", str(out), timeout=300)
        if not out.exists():
            raise RallyError(f"rally task report wrote no {out}")


# Rally 5: "Task [tags: 'wanwide-…'] <uuid>: started" (older: "Task <uuid>: started")
_TASK_RE = re.compile(r"^Task\s+(?:\[tags:\s*(?P<tags>[^\]]*)\]\s+)?(?P<uuid>[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})"
                      r"\s*:\s*started", re.I | re.M)


def _uuid_from_output(text: str, tag: str | None = None) -> str | None:
    """The uuid of the task ``rally task start`` says it started (the last such line; with ``tag``, only a line that
    names no tags or names this one)."""
    found = [m["uuid"] for m in _TASK_RE.finditer(text) if tag is None or not m["tags"] or f"'{tag}'" in m["tags"]]
    return found[-1] if found else None


class ProgressCounter:
    """Counts Rally's ``ITER: n END`` lines and prints a status line now and then."""

    _iter_re = re.compile(r"ITER:\s*(\d+)\s+END")

    def __init__(self, label: str, expected: int | None, every_s: float = 10.0, stream=None):
        self.label = label
        self.expected = expected
        self.done = 0
        self.every_s = every_s
        self.t0 = time.monotonic()
        self.last = 0.0
        self.stream = stream or sys.stderr

    def __call__(self, line: str) -> None:
        if self._iter_re.search(line):
            self.done += 1
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self.print()

    def print(self) -> None:
        exp = f"/{self.expected}" if self.expected else ""
        print(
            f"[runner] {self.label}: {time.monotonic() - self.t0:6.0f}s elapsed, "
            f"{self.done}{exp} iterations done",
            file=self.stream,
            flush=True,
        )
