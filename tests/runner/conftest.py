"""Fixtures of the runner's tests."""

from __future__ import annotations

import socket
import time

import pytest


@pytest.fixture
def ports():
    """(a port that answers, a closed port, a port whose full accept queue drops new SYNs)."""
    up = socket.socket()
    up.bind(("127.0.0.1", 0))
    up.listen(64)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: a SYN to it gets an RST
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    stuck = []
    for _ in range(3):  # fill its queue: never accepted
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(full.getsockname())
        stuck.append(c)
    time.sleep(0.2)
    yield up.getsockname()[1], closed.getsockname()[1], full.getsockname()[1]
    for s in [up, closed, full, *stuck]:
        s.close()
