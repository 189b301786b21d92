"""What the operator may change or delete: only what it made, told by labels it sets. Pure.

A namespace is the operator's when it carries ``app.kubernetes.io/managed-by: wanwide``, the uid of the
Benchmark that made it (``wanwide.io/owner-uid``) and, for a trial's namespace, the trial's label. Names
alone are never enough: a namespace called like a trial's but made by anyone else is neither applied to,
nor patched, nor deleted (the chart's ValidatingAdmissionPolicy holds the operator to the same rule).
"""

from __future__ import annotations

from typing import Any

from wanwide.core.plan import names


def namespace_ours(ns: dict[str, Any], owner_uid: str | None, trial: str | None = None) -> bool:
    """Whether the namespace ``ns`` (as read) was made by the Benchmark with ``owner_uid`` (for ``trial``)."""
    labels = (ns.get("metadata") or {}).get("labels") or {}
    return (bool(owner_uid) and labels.get(names.L_OWNER) == owner_uid
            and all(labels.get(k) == v for k, v in names.MANAGED_BY.items())
            and (trial is None or labels.get(names.L_TRIAL) == trial))


def foreign(existing: dict[str, dict[str, Any]], wanted: list[str], owner_uid: str | None, trial: str) -> list[str]:
    """Of the namespaces a trial wants, those that exist (``existing``: name → namespace) and are not its own."""
    return [n for n in wanted if n in existing and not namespace_ours(existing[n], owner_uid, trial)]


__all__ = ["foreign", "namespace_ours"]
