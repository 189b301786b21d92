"""The chart's README is generated from values.yaml, and values.schema.json covers every documented value."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "wanwide"
_spec = importlib.util.spec_from_file_location("chart_readme", ROOT / "hack" / "chart_readme.py")
chart_readme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chart_readme)
VALUES_TEXT = (CHART / "values.yaml").read_text()
SCHEMA = json.loads((CHART / "values.schema.json").read_text())


def test_readme_is_current():
    assert (CHART / "README.md").read_text() == chart_readme.render(), "run hack/chart_readme.py"


def _leaves(node: dict, prefix: str = "") -> set[str]:
    """Dotted keys of every value that is not a non-empty mapping."""
    out = set()
    for k, v in node.items():
        key = f"{prefix}{k}"
        out |= _leaves(v, f"{key}.") if isinstance(v, dict) and v else {key}
    return out


def _schema_has(dotted: str) -> bool:
    node = SCHEMA
    for part in dotted.split("."):
        props = node.get("properties")
        if props is None:  # a free-form object (resources, securityContext…): its keys are Kubernetes'
            return node.get("type") == "object"
        if part not in props:
            return False
        node = props[part]
    return True


def test_every_value_is_documented_and_in_the_schema():
    values = yaml.safe_load(VALUES_TEXT)
    documented = set(chart_readme.documented(VALUES_TEXT))
    for key in sorted(_leaves(values)):
        assert _schema_has(key), f"values.yaml key {key} is missing from values.schema.json"
        parts = key.split(".")
        assert any(".".join(parts[:i]) in documented for i in range(1, len(parts) + 1)), \
            f"values.yaml key {key} has no '# --' comment"
    for key in SCHEMA["properties"]:
        assert key in values or key == "global", f"values.schema.json describes {key}, values.yaml does not"


def test_default_values_pass_the_schema_and_mistakes_do_not():
    values = yaml.safe_load(VALUES_TEXT)
    jsonschema.validate(values, SCHEMA)
    for bad in ({**values, "imag": {}}, {**values, "clusterWide": "yes"},
                {**values, "operator": {**values["operator"], "logFormat": "xml"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def test_the_charts_runner_pod_value_is_checked_as_the_api_checks_spec_runner_pod(tmp_path):
    """One source: the chart's runner.pod defaults are validated by spec.runner.pod's own schema."""
    import shutil

    from wanwide.crds import sync_values_schema

    copy = tmp_path / "values.schema.json"
    shutil.copy(ROOT / "charts" / "wanwide" / "values.schema.json", copy)
    assert not sync_values_schema(str(copy)), "values.schema.json is stale: run hack/gen.sh"
