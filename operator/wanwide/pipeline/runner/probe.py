"""The one RTT probe: the time of TCP handshakes to ``host:port``. Standard library only.

A handshake answered by SYN/ACK or by RST (a closed port: ``connection refused``) took one round
trip either way, so both count; a probe unanswered within ``timeout`` is lost (``answers_ms``: None in its
place, so that the network check counts the loss; ``samples_ms`` leaves it out). The runner's
gauges, the lab's network check (run inside a region's namespace: ``python -m
wanwide.pipeline.runner.probe HOST PORT N INTERVAL TIMEOUT [RT]``) and the Kubernetes provider's probe Jobs
(``wanwide runner probe``) all measure with it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time


def handshake_ms(host: str, port: int, timeout: float) -> float | None:
    """One handshake's time in milliseconds; None: no answer (timeout, unreachable)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        t0 = time.perf_counter()
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            pass  # an RST: one round trip all the same
        except OSError:
            return None
        dt = (time.perf_counter() - t0) * 1000.0
        # close with RST, not FIN: no TIME_WAIT left behind by thousands of probes
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return round(dt, 3)


def answers_ms(host: str, port: int, n: int, interval: float = 0.05, timeout: float = 1.0) -> list[float | None]:
    """``n`` handshakes ``interval`` seconds apart: each one's time, None where it went unanswered (lost)."""
    out: list[float | None] = []
    for i in range(n):
        out.append(handshake_ms(host, port, timeout))
        if i + 1 < n:
            time.sleep(interval)
    return out


def samples_ms(host: str, port: int, n: int, interval: float = 0.05, timeout: float = 1.0) -> list[float]:
    """``n`` handshakes ``interval`` seconds apart; the answered ones' times (``len <= n``)."""
    return [x for x in answers_ms(host, port, n, interval, timeout) if x is not None]


def realtime(priority: int) -> bool:
    """This process at ``SCHED_FIFO`` ``priority`` from now on (True), if permitted (False: left as it was).

    Taken once started, not by a ``chrt`` prefix: a Python starting at real-time priority keeps the CPU from the
    probes already measuring at the same priority (FIFO does not preempt its equal), and a start takes seconds on an
    emulated CPU — there, concurrent probes read several ms long (docs/emulation.md, "The probe's own start")."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (AttributeError, OSError):
        return False
    return True


def main(argv: list[str]) -> int:
    """Prints every probe's time, null for one lost; an optional sixth argument: the real-time priority to measure
    at (:func:`realtime`)."""
    host, port, n, interval, timeout = argv[0], int(argv[1]), int(argv[2]), float(argv[3]), float(argv[4])
    if len(argv) > 5 and int(argv[5]) > 0:
        realtime(int(argv[5]))
    print(json.dumps(answers_ms(host, port, n, interval, timeout)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
