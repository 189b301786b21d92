"""Timestamps as wanwide writes and reads them: aware UTC datetimes, ``2026-11-23T10:00:00Z`` text."""

from __future__ import annotations

import datetime as dt


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(t: dt.datetime | None, precise: bool = False) -> str | None:
    """``YYYY-MM-DDTHH:MM:SSZ`` (UTC; whole seconds unless ``precise``: microseconds too); None stays None."""
    if t is None:
        return None
    t = t.astimezone(dt.UTC)
    return t.isoformat().replace("+00:00", "Z") if precise else t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(value: str) -> dt.datetime:
    """ISO 8601 to an aware UTC datetime; ``Z`` or an offset, a naive time is taken as UTC."""
    s = value.strip()
    if s[-1:] in ("Z", "z"):
        s = s[:-1] + "+00:00"
    try:
        t = dt.datetime.fromisoformat(s)
    except ValueError as e:
        raise ValueError(f"not an ISO 8601 time: {value!r}") from e
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.astimezone(dt.UTC)
