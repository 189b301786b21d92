"""The ``linkemu`` shaper: every shaped link of a network in one process (``linkemu.c``).

A link is a TAP device in each end's namespace; both are handed to the network's one
``ww-linkemu`` process, which forwards frames between them with each direction's delay,
jitter, loss and rate (docs/lab-layout.md: three VDE processes per link could not carry a
45-member Galera's chatter). The binary is compiled from the packaged source on first use,
cached by the source's hash (a C compiler is one of hack/install-lab.sh's packages).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wanwide.core.plan.links import OneWay
from wanwide.providers.lab import paths, procs
from wanwide.providers.lab.procs import LabError

SOURCE = Path(__file__).with_name("linkemu.c")
QUEUE_LIMIT = 100000  # frames per direction, netem's limit in netem_args
_TUNSETIFF = 0x400454CA
_IFF_TAP, _IFF_NO_PI = 0x0002, 0x1000
_lock = threading.Lock()


def _built() -> Path:
    """Where the emulator compiled from this source lives (cached by the source's hash)."""
    return paths.cache_dir() / "bin" / f"ww-linkemu-{hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]}"


def _cc() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def binary() -> Path:
    """The compiled emulator for this source, built (``cc -O2``) into the cache when missing."""
    out = _built()
    if out.exists():
        return out
    cc = _cc()
    if not cc:
        raise LabError("the linkemu shaper needs a C compiler (cc): run hack/install-lab.sh")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    r = subprocess.run([cc, "-O2", "-Wall", "-o", str(tmp), str(SOURCE)], capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"building {SOURCE.name} failed (hack/install-lab.sh installs gcc and libc6-dev): "
                       f"{r.stderr.strip()[-600:]}")
    tmp.rename(out)
    return out


def available() -> bool:
    """True when the emulator is built or can be (a C compiler and /dev/net/tun)."""
    try:
        return Path("/dev/net/tun").exists() and (_built().exists() or _cc() is not None)
    except OSError:  # the source is not there
        return False


def direction_args(ow: OneWay) -> list[int]:
    """``set`` arguments of one direction: delay µs, jitter µs, loss ppm, rate bit/s, queue limit."""
    return [round(ow.delay_ms * 1000), round(ow.jitter_ms * 1000), round(min(ow.loss_pct, 100.0) * 10000),
            round((ow.rate_mbit or 0) * 1_000_000), QUEUE_LIMIT]


@dataclass
class Emulator:
    """One running ``ww-linkemu``: its control socket and the ids it gave out."""

    sock: Path
    pid: int
    next_id: int = 0

    def command(self, line: str, fds: list[int] | None = None) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(5)
            s.connect(str(self.sock))
            if fds:
                socket.send_fds(s, [line.encode()], fds)
            else:
                s.send(line.encode())
            out = s.recv(1 << 18).decode()
        if not out.startswith("ok"):
            raise LabError(f"ww-linkemu ({self.sock}): {line!r} → {out}")
        return out

    def stats(self) -> dict[int, dict[str, int]]:
        """Per link: frames, lost (loss) and overflow (queue full) per direction."""
        keys = ("frames_ab", "lost_ab", "overflow_ab", "frames_ba", "lost_ba", "overflow_ba")
        rows = [ln.split() for ln in self.command("stats").splitlines()[1:] if ln.strip()]
        return {int(r[0]): dict(zip(keys, map(int, r[1:]), strict=True)) for r in rows}


_running: dict[Path, Emulator] = {}


def emulator_for(sock_dir: Path, state: Any = None) -> Emulator:
    """The network's emulator (one per socket directory), started on first use."""
    with _lock:
        em = _running.get(sock_dir)
        if em is not None and procs.alive(em.pid, None):
            return em
        sock_dir.mkdir(parents=True, exist_ok=True)
        sock = sock_dir / "linkemu.sock"
        log = open(sock_dir / "linkemu.log", "ab")  # noqa: SIM115 - the child keeps it
        p = subprocess.Popen([str(binary()), str(sock)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             start_new_session=True)
        log.close()
        em = Emulator(sock=sock, pid=p.pid)
        if state is not None:
            state.add_process(p.pid, f"ww-linkemu {sock_dir.name}", None)
        procs.boost(p.pid)
        procs.wait_for(lambda: sock.exists() or p.poll() is not None, 10, f"ww-linkemu socket {sock}")
        if p.poll() is not None:
            raise LabError(f"ww-linkemu exited ({p.returncode}): see {sock_dir / 'linkemu.log'}")
        _running[sock_dir] = em
        return em


def _tap(ns: str, ifname: str, tmp: str) -> int:
    """A TAP device named ``ifname`` in namespace ``ns``; returns its fd (made in the root namespace as
    ``tmp``, then moved and renamed: the fd follows it)."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH22x", tmp.encode(), _IFF_TAP | _IFF_NO_PI))
        procs.run(["ip", "link", "set", "dev", tmp, "netns", ns])
        procs.run(["ip", "link", "set", "dev", tmp, "name", ifname], netns=ns)
    except BaseException:
        os.close(fd)
        raise
    return fd


class LinkemuShaper:
    name = "linkemu"

    def connect(self, link: Any, state: Any = None) -> None:
        em = emulator_for(link.sock_dir.parent, state)
        with _lock:
            lid = em.next_id
            em.next_id += 1
        base = f"wwl{em.pid % 100000}x{lid}"
        fds: list[int] = []
        try:
            fds.append(_tap(link.ns_a, link.if_a, f"{base}a"))
            fds.append(_tap(link.ns_b, link.if_b, f"{base}b"))
            em.command(f"add {lid}", fds)
        finally:
            for fd in fds:
                os.close(fd)
        link.kind = "linkemu"
        link.mgmt = f"{em.sock}#{lid}"
        link.pids["linkemu"] = em.pid
        self.update(link, link.a_to_b, link.b_to_a)

    def update(self, link: Any, a_to_b: OneWay, b_to_a: OneWay) -> None:
        if not link.mgmt or "#" not in link.mgmt:
            raise LabError(f"link {link.a}-{link.b} has no linkemu to update")
        sock, lid = link.mgmt.rsplit("#", 1)
        em = Emulator(sock=Path(sock), pid=link.pids.get("linkemu", 0))
        for d, ow in (("ab", a_to_b), ("ba", b_to_a)):
            em.command(" ".join(["set", lid, d, *map(str, direction_args(ow))]))
        link.a_to_b, link.b_to_a = a_to_b, b_to_a
