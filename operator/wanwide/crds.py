"""The CRDs, generated from the pydantic models (the single source of truth)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from wanwide import API_GROUP, API_VERSION
from wanwide.core.api.base import cel
from wanwide.core.api.benchmark import BenchmarkSpec, BenchmarkStatus, RunnerPod
from wanwide.core.api.topology import TopologySpec, TopologyStatus
from wanwide.core.api.trial import TrialSpec, TrialStatus
from wanwide.core.plan import names

_DROP = {"title", "discriminator", "examples"}


def structural(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic JSON schema → structural OpenAPI v3 schema the API server accepts."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = copy.deepcopy(defs[node["$ref"].split("/")[-1]])
            rest = {k: v for k, v in node.items() if k != "$ref"}
            merged_rules = target.get("x-kubernetes-validations", []) + rest.pop("x-kubernetes-validations", [])
            target.update(rest)
            if merged_rules:
                target["x-kubernetes-validations"] = merged_rules
            return walk(target)
        if "anyOf" in node:
            options = [o for o in node["anyOf"] if o.get("type") != "null"]
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            if len(options) == 1:
                merged = dict(options[0]) if "$ref" in options[0] else dict(options[0])
                rules = merged.pop("x-kubernetes-validations", []) + rest.pop("x-kubernetes-validations", [])
                merged.update(rest)
                if rules:
                    merged["x-kubernetes-validations"] = rules
                if merged.get("default", "x") is None:
                    merged.pop("default")
                return walk(merged)
            raise ValueError(f"cannot express anyOf in a structural schema: {node}")
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP or key == "$defs":
                continue
            if key == "const":
                out["enum"] = [value]
                continue
            if key == "default" and value is None:
                continue
            if key == "properties":
                out[key] = {k: walk(v) for k, v in value.items()}
            else:
                out[key] = walk(value)
        if out.get("x-kubernetes-preserve-unknown-fields"):
            out.pop("additionalProperties", None)
            out.setdefault("type", "object")
        if "properties" in out and out.get("additionalProperties") is False:
            out.pop("additionalProperties")
        if out.get("additionalProperties") is True:
            out.pop("additionalProperties")
            out["x-kubernetes-preserve-unknown-fields"] = True
        if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out

    return walk(schema)


def _schema(model: type) -> dict[str, Any]:
    return structural(model.model_json_schema(by_alias=True, mode="validation"))


def runner_pod_values_schema() -> dict[str, Any]:
    """The chart's ``runner.pod`` value, as values.schema.json checks it: ``spec.runner.pod``'s own schema
    (the model is the one source), misspelt keys refused."""
    return {**_schema(RunnerPod), "additionalProperties": False}


def sync_values_schema(path: str) -> bool:
    """Write :func:`runner_pod_values_schema` into the chart's values.schema.json; whether it changed."""
    import json

    with open(path) as fh:
        text = fh.read()
    doc = json.loads(text)
    doc["properties"]["runner"]["properties"]["pod"] = runner_pod_values_schema()
    new = json.dumps(doc, indent=2) + "\n"
    if new != text:
        with open(path, "w") as fh:
            fh.write(new)
    return new != text


def _crd(
    kind: str,
    plural: str,
    spec_model: type,
    status_model: type,
    columns: list[dict[str, Any]],
    short_names: list[str],
    root_rules: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    root: dict[str, Any] = {
        "type": "object",
        "description": f"{kind} ({API_GROUP}/{API_VERSION}); see the README field reference.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _schema(spec_model),
            "status": _schema(status_model),
        },
        "required": ["spec"],
    }
    if root_rules:
        root["x-kubernetes-validations"] = root_rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{API_GROUP}",
            "labels": {"app.kubernetes.io/name": "wanwide", "app.kubernetes.io/part-of": "wanwide"},
        },
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": ["wanwide"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def _col(name: str, path: str, typ: str = "string", priority: int = 0) -> dict[str, Any]:
    col = {"name": name, "type": typ, "jsonPath": path}
    if priority:
        col["priority"] = priority
    return col


_AGE = _col("Age", ".metadata.creationTimestamp", "date")
# The API server itself refuses names that are not DNS-1123 subdomains; the planner says the same.
_NAME_RULE = cel(f"self.metadata.name.size() <= {names.BENCHMARK_NAME_MAX}", names.BENCHMARK_NAME_MESSAGE)


def crds() -> list[dict[str, Any]]:
    """The three CRDs, in a stable order."""
    return [
        _crd(
            "Topology",
            "topologies",
            TopologySpec,
            TopologyStatus,
            [
                _col("Regions", ".status.regions", "integer"),
                _col("Groups", ".status.groups", "integer"),
                _col("Valid", ".status.conditions[?(@.type=='Valid')].status"),
                _col("Matrix", ".status.matrix", priority=1),
                _AGE,
            ],
            ["topo"],
        ),
        _crd(
            "Benchmark",
            "benchmarks",
            BenchmarkSpec,
            BenchmarkStatus,
            [
                _col("Phase", ".status.phase"),
                _col("Progress", ".status.progress"),
                _col("Left", ".status.timeLeft"),
                # what the trials run (the swept values), not the spec's one value the matrix overrides
                _col("Backend", ".status.backend"),
                _col("Load", ".status.load"),
                _col("Sweep", ".status.sweep", priority=1),
                _col("Failed", ".status.trials.failed", "integer", priority=1),
                _col("Results", ".status.resultsURI", priority=1),
                _AGE,
            ],
            ["bench", "bm"],
            [_NAME_RULE],
        ),
        _crd(
            "Trial",
            "trials",
            TrialSpec,
            TrialStatus,
            [
                _col("Benchmark", ".spec.benchmark"),
                _col("Index", ".spec.index", "integer"),
                _col("Phase", ".status.phase"),
                _col("Attempt", ".status.attempt", "integer"),
                _col("Reason", ".status.reason", priority=1),
                _col("Objectives", ".status.objectives.summary", priority=1),
                _col("Parameters", ".metadata.annotations.wanwide\\.io/parameters", priority=1),
                _AGE,
            ],
            ["trial"],
        ),
    ]


def crds_yaml() -> str:
    """All CRDs as one YAML stream (what ``wanwide crds`` prints and ``crds/`` holds)."""
    header = "# Generated by `wanwide crds` from the pydantic models. Do not edit.\n"
    return header + yaml.safe_dump_all(crds(), sort_keys=False, width=120)


def crd_files() -> dict[str, str]:
    """File name → YAML for the ``crds/`` directory."""
    header = "# Generated by `wanwide crds` from the pydantic models. Do not edit.\n"
    return {
        f"{c['spec']['names']['plural']}.{API_GROUP}.yaml": header + yaml.safe_dump(c, sort_keys=False, width=120)
        for c in crds()
    }
