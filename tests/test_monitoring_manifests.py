"""The chart's monitoring files: every metric the alert rules and the dashboard query is one something
exports; every alert has its runbook."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from prometheus_client import REGISTRY

import wanwide.providers.kubernetes.controller.handlers  # noqa: F401 - registers every metric the operator exports

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "charts" / "wanwide" / "files" / "monitoring" / "rules.yaml"
DASHBOARD = ROOT / "charts" / "wanwide" / "files" / "monitoring" / "grafana-dashboard.json"
# Not the operator's: documented in docs/operations.md ("Metrics from elsewhere").
EXTERNAL = {"up"}  # Prometheus, one series per scrape target
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan"}
SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("", "_sum", "_count", "_created"), "info": ("_info",)}


def exported() -> set[str]:
    """Sample names the operator process exports (its metrics and prometheus_client's default collectors) and
    the runners' live metrics (pipeline/runner/live.py)."""
    from wanwide.pipeline.runner.live import registry

    out = set()
    for family in [*REGISTRY.collect(), *registry()[0].collect()]:
        out |= {family.name + s for s in SUFFIXES.get(family.type, ("",))}
        out |= {s.name for s in family.samples}
    return out


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (or a Grafana label_values() query)."""
    expr = re.sub(r"label_values\((.*),\s*\w+\)", r"\1", expr)  # its last argument is a label name
    expr = re.sub(r'"(\\.|[^"\\])*"', '""', expr)  # strings (label values, regexes)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", expr)  # label matchers, ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)  # label lists
    expr = re.sub(r"\$\{?\w+\}?", " ", expr)  # Grafana variables
    return {m.group(1) for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)\b(?!\s*\()", expr)
            if m.group(1).lower() not in KEYWORDS and not re.fullmatch(r"\d+e\d+", m.group(1))}


def rule_exprs() -> Iterator[tuple[str, str]]:
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            yield rule.get("alert") or rule["record"], rule["expr"]


def dashboard_exprs() -> Iterator[tuple[str, str]]:
    dash = json.loads(DASHBOARD.read_text())
    for p in dash["panels"]:
        for t in p.get("targets", []):
            yield p["title"], t["expr"]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            yield f"variable {v['name']}", v["query"]["query"]
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("expr"):
            yield f"annotation {a['name']}", a["expr"]


def test_the_extractor_finds_metrics_and_nothing_else():
    assert metric_names('sum by (le, handler) (rate(wanwide_reconcile_seconds_bucket{job="x"}[5m])) > 30') == {
        "wanwide_reconcile_seconds_bucket"}
    assert metric_names('absent(up{job="wanwide"} == 1)') == {"up"}
    assert metric_names('label_values(wanwide_trials{namespace="$namespace"}, benchmark)') == {"wanwide_trials"}
    assert metric_names("a_total / ignoring (x) group_left (y) b - time()") == {"a_total", "b"}


@pytest.mark.parametrize("source", ["rules", "dashboard"])
def test_every_queried_metric_is_exported(source):
    known = exported() | EXTERNAL
    exprs = list(rule_exprs() if source == "rules" else dashboard_exprs())
    assert exprs
    used = set()
    for where, expr in exprs:
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        assert names <= known, f"{where}: {sorted(names - known)} exported by nothing (see docs/operations.md)"
        used |= names
    if source == "rules":  # the alerts cover the operator being down, stuck trials, failures and errors
        assert {"up", "wanwide_trial_phase_deadline_timestamp_seconds", "wanwide_trials",
                "wanwide_trial_step_errors_total", "wanwide_chart_errors_total"} <= used
    else:  # the experiment, not only the operator: iterations, failures, latency by region, fault windows
        assert {"wanwide_rally_iterations_total", "wanwide_rally_iteration_seconds_bucket",
                "wanwide_rally_iterations_planned", "wanwide_fault_window_active"} <= used


def test_fault_windows_are_annotations_and_no_panel_is_a_note():
    dash = json.loads(DASHBOARD.read_text())
    notes = [p["title"] for p in dash["panels"] if p["type"] == "text"]
    assert notes == []
    faults = [a for a in dash["annotations"]["list"] if "wanwide_fault_window_active" in a.get("expr", "")]
    assert faults and faults[0]["enable"] and "{{fault}}" in faults[0]["titleFormat"]


def test_every_operator_metric_is_documented():
    doc = (ROOT / "docs" / "operations.md").read_text()
    ours = {f.name for f in REGISTRY.collect() if f.name.startswith("wanwide_")}
    assert ours
    for name in ours:
        family = next(f for f in REGISTRY.collect() if f.name == name)
        shown = name + ("_total" if family.type == "counter" else "")
        assert f"`{shown}`" in doc, f"{shown} is not in docs/operations.md"


def test_prometheusrule_is_valid_against_the_real_crd():
    from tests.plan.test_upstream_schemas import upstream_crds

    schema = upstream_crds("prometheus-operator")[("monitoring.coreos.com/v1", "PrometheusRule")]
    jsonschema.Draft4Validator(schema).validate({"spec": yaml.safe_load(RULES.read_text())})


def test_every_alert_has_a_runbook_section():
    """The chart links each alert to docs/runbooks.md#<its name in lower case>: that section exists
    and says what it means, how to check and how to fix."""
    page = (ROOT / "docs" / "runbooks.md").read_text()
    sections = {m.group(1).lower(): m.end() for m in re.finditer(r"(?m)^## (\w+)$", page)}
    alerts = [name for name, _ in rule_exprs()]
    assert alerts
    for alert in alerts:
        assert alert.lower() in sections, f"docs/runbooks.md has no section '## {alert}'"
        body = page[sections[alert.lower()]:].split("\n## ", 1)[0]
        for part in ("**Means**", "**Check**", "**Fix**"):
            assert part in body, f"{alert}: no {part}"
    assert set(sections) == {a.lower() for a in alerts}, "runbooks for alerts that do not exist"
