"""A free TCP port on loopback, for tests that start a server (never a fixed port: a leftover of a killed run may
hold it, and a readiness check would then take that server for the test's)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on at the moment of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
