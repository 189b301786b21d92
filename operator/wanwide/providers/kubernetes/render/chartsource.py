"""Which charts an operator renders: the cluster admin's list, not the Benchmark author's choice. Pure.

A Benchmark names a chart (``spec.openstack.keystone``: repository, chart, version); the operator runs
``helm pull`` and ``helm template`` on it and applies what comes out. So the chart's source is checked
against the operator's setting (the chart value ``charts.allowed``, flag ``--allowed-charts``) before helm
is run: an entry is a chart's full source — ``https://repo/path/chart`` (a repository and a chart in it),
``oci://registry/path/chart``, or a local directory such as ``/charts/keystone`` — or a prefix ending in
``/`` that allows everything below it. Plain ``http://`` entries are accepted (an in-cluster mirror) but
said to be insecure; a Benchmark may use ``http://`` only where such an entry allows it. Nothing that
starts with ``-`` reaches helm (it would be read as a flag); the commands put ``--`` before their
arguments as well (kube/helm.py).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from urllib.parse import urlsplit

OPENSTACK_HELM = "https://tarballs.opendev.org/openstack/openstack-helm"
DEFAULT_ALLOWED: tuple[str, ...] = tuple(f"{OPENSTACK_HELM}/{c}" for c in ("keystone", "rabbitmq", "placement", "glance",
                                                                           "nova", "neutron"))
FIX = "use an allowed source, or ask the cluster admin to add it (the wanwide chart's charts.allowed value)"


def source(repo: str, chart: str) -> str:
    """The chart's full source: ``repo/chart``, the OCI reference, or the local path (normalised)."""
    if chart.startswith("oci://"):
        return chart
    if repo:
        return f"{repo.rstrip('/')}/{chart}"
    return posixpath.normpath(chart) if chart.startswith("/") else chart


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` cannot be an allowed source (None: it can)."""
    if entry.startswith("/"):
        return None if posixpath.normpath(entry) == entry.rstrip("/") or entry == "/" else (
            f"{entry!r}: write the path without '..', '.' or '//'")
    u = urlsplit(entry)
    if u.scheme not in ("https", "http", "oci") or not u.hostname:
        return f"{entry!r}: an entry is https://…, oci://… or an absolute directory"
    if u.username or u.password:
        return f"{entry!r}: no credentials in an entry (give helm its registry login instead)"
    return None


def insecure(entries: Sequence[str]) -> list[str]:
    """The entries that fetch charts without TLS (said at start-up)."""
    return [e for e in entries if e.startswith("http://")]


def allowed(src: str, entries: Sequence[str]) -> bool:
    return any(src == e.rstrip("/") or src.startswith(e if e.endswith("/") else e + "/") for e in entries)


def problem(repo: str, chart: str, version: str, entries: Sequence[str]) -> tuple[str, str] | None:
    """(field, message) when the operator must not render this chart; None when it may."""
    for field, value in (("chart", chart), ("chartRepo", repo), ("chartVersion", version)):
        if value.startswith("-") or any(c.isspace() or ord(c) < 32 for c in value):
            return field, f"{value!r} is not a chart {field[5:].lower() or 'name'}: no leading '-', spaces or control characters"
    if repo:
        u = urlsplit(repo)
        if u.scheme not in ("https", "http") or not u.hostname:
            return "chartRepo", f"{repo!r}: a chart repository is an https:// URL"
        if u.username or u.password:
            return "chartRepo", f"{repo!r}: no credentials in the URL"
        if "/" in chart or chart.startswith("oci://"):
            return "chart", f"{chart!r}: with chartRepo, chart is a chart name in it"
    elif not chart.startswith(("oci://", "/")):
        return "chart", f"{chart!r}: a chart is a name in chartRepo, an oci:// reference or an absolute path"
    src = source(repo, chart)
    if allowed(src, entries):
        return None
    return "chart", f"{src} is not a chart source this operator renders (it allows {', '.join(entries) or 'none'}): {FIX}"


__all__ = ["DEFAULT_ALLOWED", "allowed", "entry_problem", "insecure", "problem", "source"]
