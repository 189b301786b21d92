"""Quantities written the way people write them: ``20ms``, ``0.5s``, ``1%``, ``100mbit``.

Fields keep the user's string (so a round trip through the API server is
lossless); these helpers validate and convert them. The same regular
expressions go into the CRD schema as CEL rules, so the API server and the
planner reject the same strings with the same words.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from wanwide.core.api.base import cel_matches

DURATION_RE = r"^[0-9]+(\.[0-9]+)?(us|ms|s|m|h)$"
PERCENT_RE = r"^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)%$"
RATE_RE = r"^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit|tbit)$"

DURATION_HINT = "must be a non-negative duration with a unit, such as 20ms, 0.5s or 5m"
PERCENT_HINT = "must be a percentage from 0% to 100%, such as 1% or 0.5%"
RATE_HINT = "must be a rate with a unit, such as 100mbit or 10gbit"

_DURATION_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_RATE_MBIT = {"bit": 1e-6, "kbit": 1e-3, "mbit": 1.0, "gbit": 1e3, "tbit": 1e6}


def _checker(regex: str, hint: str):
    pattern = re.compile(regex)

    def check(value: str) -> str:
        if not isinstance(value, str) or not pattern.match(value):
            raise ValueError(f"{value!r} {hint}")
        return value

    return check


def _schema(regex: str, hint: str) -> dict[str, Any]:
    return {
        "type": "string",
        "maxLength": 32,
        "x-kubernetes-validations": [
            {"rule": cel_matches(regex), "message": hint},
        ],
    }


Duration = Annotated[
    str, AfterValidator(_checker(DURATION_RE, DURATION_HINT)), WithJsonSchema(_schema(DURATION_RE, DURATION_HINT))
]
Percent = Annotated[
    str, AfterValidator(_checker(PERCENT_RE, PERCENT_HINT)), WithJsonSchema(_schema(PERCENT_RE, PERCENT_HINT))
]
Rate = Annotated[str, AfterValidator(_checker(RATE_RE, RATE_HINT)), WithJsonSchema(_schema(RATE_RE, RATE_HINT))]


def ms(value: str | None) -> float:
    """``'20ms'`` → 20.0; ``None`` → 0.0."""
    if value is None:
        return 0.0
    m = re.match(r"^([0-9.]+)([a-z]+)$", value)
    if not m or m.group(2) not in _DURATION_MS:
        raise ValueError(f"{value!r} {DURATION_HINT}")
    return float(m.group(1)) * _DURATION_MS[m.group(2)]


def seconds(value: str | None) -> float:
    return ms(value) / 1000.0


def pct(value: str | None) -> float:
    """``'1%'`` → 1.0; ``None`` → 0.0."""
    if value is None:
        return 0.0
    return float(value.rstrip("%"))


def mbit(value: str | None) -> float | None:
    """``'10gbit'`` → 10000.0; ``None`` → None (unlimited)."""
    if value is None:
        return None
    m = re.match(r"^([0-9.]+)([a-z]+)$", value)
    if not m or m.group(2) not in _RATE_MBIT:
        raise ValueError(f"{value!r} {RATE_HINT}")
    return float(m.group(1)) * _RATE_MBIT[m.group(2)]


def fmt_ms(value: float) -> str:
    """20.0 → ``'20ms'``; 0.25 → ``'250us'`` (what tc and Chaos Mesh accept)."""
    if value == 0:
        return "0ms"
    if value < 1 or value != int(value):
        return f"{round(value * 1000)}us"
    return f"{int(value)}ms"


def fmt_pct(value: float) -> str:
    """0.5 → ``'0.5'`` (Chaos Mesh takes loss as a bare number string)."""
    return f"{value:g}"


def fmt_rate(value_mbit: float) -> str:
    """100.0 → ``'100mbit'``."""
    if value_mbit >= 1 and value_mbit == int(value_mbit):
        return f"{int(value_mbit)}mbit"
    return f"{round(value_mbit * 1000)}kbit"
