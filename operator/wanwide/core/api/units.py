"""Quantities written the way people write them: ``20ms``, ``0.5s``, ``1%``, ``100mbit``.

Fields keep the user's string (so a round trip through the API server is
lossless); these helpers validate and convert them. The same regular
expressions and bounds go into the CRD schema as CEL rules, so the API server
and the planner reject the same strings with the same words.

Every duration and rate field has bounds (:func:`duration`, :func:`rate`): at
most six digits before the decimal point (so CEL's ``duration()`` never
overflows), and each field's own range, stated in its description.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from wanwide.core.api.base import cel_matches

DURATION_RE = r"^[0-9]{1,6}(\.[0-9]{1,9})?(us|ms|s|m|h)$"
PERCENT_RE = r"^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)%$"
RATE_RE = r"^[0-9]{1,6}(\.[0-9]{1,6})?(bit|kbit|mbit|gbit|tbit)$"

DURATION_HINT = "must be a non-negative duration with a unit, such as 20ms, 0.5s or 5m (at most 6 digits before the point)"
PERCENT_HINT = "must be a percentage from 0% to 100%, such as 1% or 0.5%"
RATE_HINT = "must be a rate with a unit, such as 100mbit or 10gbit"

_DURATION_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_DURATION_NS = {"us": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_RATE_MBIT = {"bit": 1e-6, "kbit": 1e-3, "mbit": 1.0, "gbit": 1e3, "tbit": 1e6}


def _schema(regex: str, hint: str, extra: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "type": "string",
        "maxLength": 32,
        "x-kubernetes-validations": [{"rule": cel_matches(regex), "message": hint}, *(extra or [])],
    }


def _checker(regex: str, hint: str):
    pattern = re.compile(regex)

    def check(value: str) -> str:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise ValueError(f"{value!r} {hint}")
        return value

    return check


def nanos(value: str) -> int:
    """``'1.5s'`` → 1500000000: exact, for comparisons with bounds (the CRD's CEL compares Go durations)."""
    m = re.fullmatch(r"([0-9]+)(?:\.([0-9]+))?(us|ms|s|m|h)", value)
    if not m:
        raise ValueError(f"{value!r} {DURATION_HINT}")
    unit = _DURATION_NS[m.group(3)]
    frac = m.group(2) or ""
    return int(m.group(1)) * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)


def _guarded(expr: str, regex: str) -> str:
    """``expr``'s value is well formed (the format rule reports it otherwise)."""
    return "!" + cel_matches(regex).replace("self", expr, 1)


def cel_duration_ok(expr: str) -> str:
    """CEL: the duration string ``expr`` is well formed (so ``duration(expr)`` cannot fail)."""
    return cel_matches(DURATION_RE).replace("self", expr, 1)


def _range_words(lo: str | None, hi: str | None) -> str:
    if lo and hi:
        return f"from {lo} to {hi}"
    return f"at least {lo}" if lo else f"at most {hi}"


def duration(lo: str | None = None, hi: str | None = None) -> Any:
    """A duration field with bounds (inclusive), checked alike by the planner and the CRD's CEL."""
    if lo is None and hi is None:
        return Duration
    lo_ns = nanos(lo) if lo else None
    hi_ns = nanos(hi) if hi else None
    words = f"must be {_range_words(lo, hi)}"
    fmt = _checker(DURATION_RE, DURATION_HINT)

    def check(value: str) -> str:
        fmt(value)
        n = nanos(value)
        if (lo_ns is not None and n < lo_ns) or (hi_ns is not None and n > hi_ns):
            raise ValueError(f"{value!r} {words}")
        return value

    conds = ([f"duration(self) >= duration('{lo}')"] if lo else []) + ([f"duration(self) <= duration('{hi}')"] if hi else [])
    rule = {"rule": f"{_guarded('self', DURATION_RE)} || ({' && '.join(conds)})", "message": words}
    return Annotated[str, AfterValidator(check), WithJsonSchema(_schema(DURATION_RE, DURATION_HINT, [rule]))]


def _rate_mbit(value: str) -> float:
    """The rate in mbit/s, computed as the CRD's CEL computes it (so both agree at the bounds)."""
    for unit in ("kbit", "mbit", "gbit", "tbit", "bit"):
        if value.endswith(unit):
            number = float(value[: -len(unit)])
            return {"kbit": number / 1000.0, "mbit": number, "gbit": number * 1000.0, "tbit": number * 1000000.0,
                    "bit": number / 1000000.0}[unit]
    raise ValueError(f"{value!r} {RATE_HINT}")


def _cel_rate_mbit() -> str:
    def num(n: int) -> str:
        return f"double(self.substring(0, self.size() - {n}))"

    return (f"(self.endsWith('kbit') ? {num(4)} / 1000.0 : self.endsWith('mbit') ? {num(4)} : "
            f"self.endsWith('gbit') ? {num(4)} * 1000.0 : self.endsWith('tbit') ? {num(4)} * 1000000.0 : "
            f"{num(3)} / 1000000.0)")


RATE_MIN, RATE_MAX = "1kbit", "100gbit"
RATE_RANGE_MBIT = (0.001, 100000.0)


def _rate() -> Any:
    words = f"must be from {RATE_MIN} to {RATE_MAX} (tc shapes nothing slower; no link here is faster)"
    fmt = _checker(RATE_RE, RATE_HINT)

    def check(value: str) -> str:
        fmt(value)
        if not RATE_RANGE_MBIT[0] <= _rate_mbit(value) <= RATE_RANGE_MBIT[1]:
            raise ValueError(f"{value!r} {words}")
        return value

    v = _cel_rate_mbit()
    rule = {"rule": f"{_guarded('self', RATE_RE)} || ({v} >= {RATE_RANGE_MBIT[0]} && {v} <= {RATE_RANGE_MBIT[1]})",
            "message": words}
    return Annotated[str, AfterValidator(check), WithJsonSchema(_schema(RATE_RE, RATE_HINT, [rule]))]


Duration = Annotated[
    str, AfterValidator(_checker(DURATION_RE, DURATION_HINT)), WithJsonSchema(_schema(DURATION_RE, DURATION_HINT))
]
Percent = Annotated[
    str, AfterValidator(_checker(PERCENT_RE, PERCENT_HINT)), WithJsonSchema(_schema(PERCENT_RE, PERCENT_HINT))
]
Rate = _rate()
"""A link's bandwidth: 1kbit to 100gbit."""

# The bounds of the API's durations (each field's description says its own).
RTT_MAX = "10s"  # a link's round trip (and jitter): a WAN across the world is 0.3 s; beyond 10 s nothing answers
Rtt = duration(hi=RTT_MAX)
TIMEOUT_MIN, TIMEOUT_MAX = "1s", "24h"
Timeout = duration(TIMEOUT_MIN, TIMEOUT_MAX)
"""A phase timeout: 1s to 24h (0s would fail every trial at once; a phase is never a day long)."""


def ms(value: str | None) -> float:
    """``'20ms'`` → 20.0; ``None`` → 0.0."""
    if value is None:
        return 0.0
    m = re.fullmatch(r"([0-9.]+)([a-z]+)", value)
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
    m = re.fullmatch(r"([0-9.]+)([a-z]+)", value)
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
