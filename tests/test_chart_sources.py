"""Which charts the operator renders, and what reaches helm's command line (issue 43; docs/security.md 1–2)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tests.chartdata import FIXTURE, REPO, release
from wanwide.providers.kubernetes.kube import helm
from wanwide.providers.kubernetes.render import chartsource
from wanwide.providers.kubernetes.render.chart import ChartRefused

OSH = chartsource.OPENSTACK_HELM
DEFAULT = chartsource.DEFAULT_ALLOWED


@pytest.mark.parametrize("repo, chart, version, field, said", [
    (OSH, "--post-renderer=/bin/sh", "1.0", "chart", "no leading '-'"),
    (OSH, "keystone", "--debug", "chartVersion", "no leading '-'"),
    ("--repo=x", "keystone", "1.0", "chartRepo", "no leading '-'"),
    (OSH, "key stone", "1.0", "chart", "spaces"),
    (OSH, "keystone\n", "1.0", "chart", "control characters"),
    ("http://169.254.169.254/latest", "keystone", "1.0", "chart", "not a chart source this operator renders"),
    ("file:///etc", "keystone", "1.0", "chartRepo", "https:// URL"),
    ("https://user:pw@tarballs.opendev.org/openstack/openstack-helm", "keystone", "1.0", "chartRepo",
     "no credentials"),
    (OSH, "../keystone", "1.0", "chart", "a chart name in it"),
    ("", "keystone", "1.0", "chart", "an absolute path"),
    ("", "/etc/../root/chart", "1.0", "chart", "/root/chart is not a chart source"),
    (OSH, "heat", "1.0", "chart", f"{OSH}/heat is not a chart source"),
    ("", "oci://ghcr.io/evil/keystone", "1.0", "chart", "not a chart source"),
])
def test_a_chart_source_the_operator_does_not_allow_is_refused_naming_the_field(repo, chart, version, field, said):
    got = chartsource.problem(repo, chart, version, DEFAULT)
    assert got is not None and got[0] == field and said in got[1], got
    assert "\n" not in got[1]


def test_allowed_sources_exact_or_below_a_prefix_and_http_only_where_an_entry_says_so():
    assert chartsource.problem(OSH, "keystone", "2026.1.0", DEFAULT) is None
    assert chartsource.problem(OSH + "/", "keystone", "2026.1.0", DEFAULT) is None
    assert chartsource.problem("", "/charts/keystone", "1", ["/charts/"]) is None
    assert chartsource.problem("", "/charts/../etc/keystone", "1", ["/charts/"]) is not None
    assert chartsource.problem("", "/chartsX/keystone", "1", ["/charts"]) is not None  # not a prefix of a name
    assert chartsource.problem("", "oci://registry.example/osh/keystone", "1", ["oci://registry.example/osh/"]) is None
    mirror = "http://charts.wanwide-system.svc:8080"
    assert chartsource.problem(mirror, "keystone", "1", DEFAULT) is not None
    assert chartsource.problem(mirror, "keystone", "1", [mirror + "/"]) is None
    assert chartsource.insecure([mirror + "/", OSH]) == [mirror + "/"]


@pytest.mark.parametrize("entry, ok", [
    (OSH + "/keystone", True), ("oci://ghcr.io/x/", True), ("/charts/", True), ("http://mirror:8080/", True),
    ("/charts/../etc", False), ("ftp://x/", False), ("keystone", False), ("https://u:p@host/", False),
])
def test_the_admins_entries_are_checked_at_start(entry, ok):
    assert (chartsource.entry_problem(entry) is None) == ok


def test_helm_reads_the_release_and_chart_after_double_dash(monkeypatch):
    monkeypatch.setenv("WANWIDE_HELM", "/usr/bin/helm")
    rel = dataclasses.replace(release(), chart="--post-renderer=/bin/sh")
    cmd = helm.command(rel, rel.chart)
    assert cmd[cmd.index("--") + 1:] == [rel.name, "--post-renderer=/bin/sh"]
    pull = helm.pull_command(dataclasses.replace(rel, repo=OSH, chart="keystone"), "/tmp/d", "/keys.gpg")
    assert pull[-2:] == ["--", "keystone"] and "--verify" in pull and pull[pull.index("--keyring") + 1] == "/keys.gpg"
    assert "--verify" not in helm.pull_command(rel, "/tmp/d", None)


def test_the_renderer_refuses_a_source_before_helm_runs_and_resolves_links(tmp_path, monkeypatch):
    ran: list[list[str]] = []
    monkeypatch.setattr(helm, "_run", lambda cmd, *a, **k: ran.append(cmd) or "")
    r = helm.Renders(workers=1, cache_dir=str(tmp_path), policy=helm.Policy((str(tmp_path / "charts"),)))
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "keystone").symlink_to(REPO / FIXTURE)  # a link out of the allowed directory
    for chart, said in ((str(tmp_path / "charts" / "keystone"), "resolves to"),
                        ("/etc/keystone", "is not a chart source")):
        rel = dataclasses.replace(release(), repo="", chart=chart)
        with pytest.raises(ChartRefused, match=said):
            r.render(rel, {})
    assert ran == []


@pytest.mark.parametrize("chart, ok", [
    ("/root/.cache/wanwide/charts/keystone-24908654c3b5/keystone", True),  # hack/upstream-charts.sh's copy
    ("/srv/charts/keystone/", True),
    ("/srv/.charts/_k+s-1.0/keystone", True),
    ("/srv/charts/../keystone", False),
    ("/srv/charts/..keystone", False),
    ("/srv/./keystone", False),
    ("/srv/charts/..", False),
    ("/.", False),
])
def test_a_chart_path_may_pass_through_hidden_directories_but_never_dot_or_dot_dot(chart, ok):
    """The Benchmark's own check (the CRD's CEL rule is the same regex: tests/test_crds.py compiles it in RE2)."""
    from pydantic import TypeAdapter, ValidationError

    from wanwide.core.api.refs import CHART_MSG, CHART_RE, Chart

    assert bool(re.fullmatch(CHART_RE, chart)) is ok
    if ok:
        assert TypeAdapter(Chart).validate_python(chart) == chart
    else:
        with pytest.raises(ValidationError, match=re.escape(CHART_MSG)):
            TypeAdapter(Chart).validate_python(chart)
