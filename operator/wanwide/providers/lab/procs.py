"""Process helpers for the lab: run in a namespace, start with a log, wait, stop.

Nothing here knows about regions: :mod:`wanwide.providers.lab.netns` maps regions to
namespace names and :mod:`wanwide.providers.lab.services` builds on :class:`Managed`.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.core.errors import PermanentError

log = logging.getLogger(__name__)


class LabError(PermanentError, RuntimeError):
    """A lab step failed; the message says what and shows the relevant log tail."""


class ReadinessError(LabError):
    """A service did not become ready in time."""


def ns_argv(netns: str | None, argv: Sequence[str]) -> list[str]:
    """argv that runs ``argv`` inside network namespace ``netns`` (None: here)."""
    argv = [str(a) for a in argv]
    return ["ip", "netns", "exec", netns, *argv] if netns else argv


def run(
    argv: Sequence[str],
    netns: str | None = None,
    check: bool = True,
    timeout: float | None = 120,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run to completion, capturing output; on failure raise LabError with stderr."""
    full = ns_argv(netns, argv)
    e = None if env is None else {**os.environ, **env}
    try:
        r = subprocess.run(
            full, capture_output=True, text=True, timeout=timeout, env=e, input=input, cwd=cwd
        )
    except subprocess.TimeoutExpired as ex:
        raise LabError(f"timed out after {timeout} s: {' '.join(full)}") from ex
    if check and r.returncode != 0:
        raise LabError(
            f"command failed ({r.returncode}): {' '.join(full)}\n"
            f"{tail_text((r.stderr or '') + (r.stdout or ''), 30)}"
        )
    return r


_STAMP = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s*")


def tail_text(text: str, lines: int = 30) -> str:
    """The last ``lines`` lines, a run of lines that differ only in their leading timestamp counted as one
    (a joiner's minutes of "Connection refused" would otherwise hide the line that says why it stopped)."""
    out: list[str] = []
    run, last = 0, ""
    for line in text.rstrip().splitlines():
        if out and _STAMP.sub("", line) == _STAMP.sub("", out[-1]):
            run, last = run + 1, line
            continue
        if run:
            out.append(f"    (the line above {run} more time(s), the last: {_stamp(last)})")
        out.append(line)
        run = 0
    if run:
        out.append(f"    (the line above {run} more time(s), the last: {_stamp(last)})")
    return "\n".join(out[-lines:])


def _stamp(line: str) -> str:
    m = _STAMP.match(line)
    return m.group(0).strip() if m else line[:40]


def tail(path: str | Path, lines: int = 30) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(no log: {e})"
    return tail_text(data, lines)


def keep_tails(src: Path, dest: Path, limit: int = 256 * 1024) -> Path | None:
    """Copy the last ``limit`` bytes of every ``*.log`` under ``src`` to the same place under ``dest``
    (what a failed deployment's services said, before its directory goes); ``dest`` or None if none."""
    kept = 0
    for f in sorted(src.rglob("*.log")) if src.is_dir() else []:
        with contextlib.suppress(OSError):
            with open(f, "rb") as fh:
                fh.seek(max(0, f.stat().st_size - limit))
                data = fh.read()
            to = dest / f.relative_to(src)
            to.parent.mkdir(parents=True, exist_ok=True)
            to.write_bytes(data)
            kept += 1
    return dest if kept else None


def start_time(pid: int) -> int | None:
    """Kernel start time (clock ticks since boot) of pid, or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may hold spaces/parens: fields after the last ')'
    rest = stat[stat.rfind(")") + 2 :].split()
    return int(rest[19])


def alive(pid: int, start: int | None = None) -> bool:
    st = start_time(pid)
    if st is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state == "Z":
        return False
    return start is None or st == start


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(x) for x in (task / "children").read_text().split()]
    except OSError:
        pass
    return out


def descendants(pid: int) -> list[int]:
    seen: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


def kill_tree(pid: int, start: int | None = None, grace: float = 5.0) -> None:
    """SIGTERM pid and its descendants, SIGKILL what is left after ``grace`` s."""
    kill_trees([(pid, start)], grace)


def kill_trees(roots: list[tuple[int, int | None]], grace: float = 5.0) -> None:
    """:func:`kill_tree` of every ``(pid, start)`` at once: all are asked to stop, then all are waited for
    together (one by one, 40 Galera members took ~2 min to clean up)."""
    victims = [v for pid, start in roots if alive(pid, start) for v in (pid, *descendants(pid))]
    starts = {p: start_time(p) for p in victims}
    for p in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not any(alive(p, starts[p]) for p in victims):
            return
        time.sleep(0.05)
    for p in victims:
        if alive(p, starts[p]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and any(alive(p, starts[p]) for p in victims):
        _reap()
        time.sleep(0.05)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break


NOT_YET = (OSError, LabError, http.client.HTTPException, subprocess.SubprocessError)
"""What a check of a service that is not ready yet raises (urllib's errors are OSErrors)."""


def wait_for(
    check: Callable[[], Any],
    timeout: float,
    what: str,
    log_path: str | Path | None = None,
    interval: float = 0.2,
    proc: subprocess.Popen[Any] | None = None,
) -> Any:
    """Poll ``check()`` until it returns a truthy value; raise ReadinessError with the log tail.

    What a service not ready yet raises in ``check`` (:data:`NOT_YET`: refused connections, an HTTP error, a
    tool that failed, a command that exited non-zero) counts as "not yet"; anything else is a bug and raised.
    If ``proc`` exits meanwhile, fail at once.
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            v = check()
            if v:
                return v
        except NOT_YET as e:
            last_exc = e
        if proc is not None and proc.poll() is not None:
            raise ReadinessError(
                f"{what}: process exited with code {proc.returncode} before being ready"
                + (f"\n--- {log_path} (tail) ---\n{tail(log_path)}" if log_path else "")
            )
        if time.monotonic() > deadline:
            raise ReadinessError(
                f"{what}: not ready after {timeout:.0f} s"
                + (f" (last error: {last_exc})" if last_exc else "")
                + (f"\n--- {log_path} (tail) ---\n{tail(log_path)}" if log_path else "")
            )
        time.sleep(interval)


@dataclass
class Managed:
    """A long-running process started by the lab, with its own log file."""

    name: str
    argv: list[str]
    log_path: Path
    netns: str | None = None
    popen: subprocess.Popen[bytes] | None = None
    pid: int = 0
    start: int | None = None
    started_at: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start_process(
        cls,
        name: str,
        argv: Sequence[str],
        log_path: str | Path,
        netns: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        state: Any = None,
    ) -> Managed:
        """Start ``argv`` (in ``netns``), stdout+stderr appended to ``log_path``.

        Runs in its own session (process group) so it survives the caller's
        terminal signals and can be killed as a group. ``state`` (a LabState)
        records the pid for crash clean-up.
        """
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        full = ns_argv(netns, argv)
        e = None if env is None else {**os.environ, **env}
        with open(log_path, "ab") as lf:
            lf.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} start: {' '.join(full)}\n".encode())
            lf.flush()
            p = subprocess.Popen(
                full,
                stdin=subprocess.DEVNULL,
                stdout=lf,
                stderr=subprocess.STDOUT,
                env=e,
                cwd=cwd,
                start_new_session=True,
            )
        m = cls(name=name, argv=list(full), log_path=log_path, netns=netns, popen=p, pid=p.pid)
        m.start = start_time(p.pid)
        m.started_at = time.monotonic()
        if state is not None:
            state.add_process(p.pid, name, netns)
        log.debug("started %s pid %d: %s", name, p.pid, " ".join(full))
        return m

    def running(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return alive(self.pid, self.start)

    def stop(self, grace: float = 10.0, state: Any = None) -> None:
        if self.popen is not None and self.popen.poll() is None:
            kill_tree(self.pid, self.start, grace=grace)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=2)
        elif self.popen is None:
            kill_tree(self.pid, self.start, grace=grace)
        if state is not None:
            state.remove_process(self.pid)

    def wait_ready(self, check: Callable[[], Any], timeout: float, what: str | None = None) -> Any:
        return wait_for(check, timeout, what or self.name, self.log_path, proc=self.popen)


def boost(pid: int) -> str:
    """Give a shaping process real-time priority (SCHED_FIFO 20), else nice -10.

    A wirefilter delays packets with timers in user space: on a loaded machine
    its wake-ups come late and the RTT grows (measured: +5..20 ms at load 18
    on 2 cores without this). Returns the policy obtained.
    """
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(20))
        return "fifo"
    except (OSError, AttributeError):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, pid, -10)
            return "nice-10"
    return "normal"
