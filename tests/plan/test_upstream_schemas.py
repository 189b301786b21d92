"""Every dependency object the planner renders is checked against the upstream schema.

Chaos Mesh and prometheus-operator: their real CRDs, read at test time from the pinned
Go modules (hack/upstream-crds.sh; never committed), with strict unknown-field checking
as ``kubectl apply --validate=strict`` does. mariadb-operator and cockroach-operator are
refused by the module proxy here: their field lists were derived from the real CRDs
(tests/data/upstream/, see docs/upstream-checks.md) and every field we set must be in them.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.plan.specs import benchmark
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render import render_trial

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT / "tests" / "data" / "upstream"
EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))


def _all_rendered() -> list[dict]:
    out = []
    docs = [yaml.safe_dump(benchmark(b, t)) for b in ("mariadb", "galera", "cockroachdb")
            for t in ("uniform", "hierarchical", "explicit")]
    loss = benchmark("galera", "uniform")
    loss["spec"]["faults"]["lossWindows"] = [{"regions": ["r1"], "loss": "5%", "start": "10s", "duration": "30s"}]
    docs.append(yaml.safe_dump(loss))
    docs += [p.read_text() for p in EXAMPLES]
    for text in docs:
        d = load_documents([text])
        for b in d.benchmarks:
            for p in plan(b, d.topology_for(b))[:3]:
                out.extend(render_trial(p, start_at="2026-01-01T00:00:00Z").objects)
    return out


@functools.lru_cache(maxsize=1)
def rendered() -> tuple[dict, ...]:
    return tuple(_all_rendered())


def _strict(schema: dict) -> dict:
    """Reject unknown fields where the API server would prune them."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if out.get("type") == "object" and "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields") \
                and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loader that reads a bare ``=`` (as in prometheus-operator's enums) as a string."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


@functools.lru_cache(maxsize=2)
def upstream_crds(project: str) -> dict[tuple[str, str], dict]:
    paths = subprocess.run([str(ROOT / "hack" / "upstream-crds.sh"), project], check=True, capture_output=True,
                           text=True, timeout=600).stdout.split()
    out = {}
    for path in paths:
        for crd in yaml.load_all(Path(path).read_text(), Loader=_Loader):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            for v in crd["spec"]["versions"]:
                out[(f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"])] = _strict(
                    v["schema"]["openAPIV3Schema"])
    return out


@pytest.mark.parametrize("project,api_prefix", [("chaos-mesh", "chaos-mesh.org/"),
                                                ("prometheus-operator", "monitoring.coreos.com/")])
def test_objects_valid_against_real_crds(project, api_prefix):
    schemas = upstream_crds(project)
    objs = [o for o in rendered() if o["apiVersion"].startswith(api_prefix)]
    kinds = {o["kind"] for o in objs}
    assert kinds, f"no {project} objects rendered"
    for o in objs:
        schema = schemas.get((o["apiVersion"], o["kind"]))
        assert schema is not None, f"{o['apiVersion']} {o['kind']} is not a kind of {project}"
        body = {k: v for k, v in o.items() if k != "metadata"}
        try:
            # OpenAPI v3.0 schemas follow draft 4 (boolean exclusiveMinimum/Maximum).
            jsonschema.Draft4Validator(schema).validate(body)
        except jsonschema.ValidationError as e:
            pytest.fail(f"{o['kind']}/{o['metadata']['name']}: {e.message} at {list(e.absolute_path)}")


def test_real_chaos_schema_rejects_what_the_api_server_would():
    """The check above can fail: a wrong action and an unknown field are refused."""
    schema = upstream_crds("chaos-mesh")[("chaos-mesh.org/v1alpha1", "NetworkChaos")]
    good = next(o for o in rendered() if o["kind"] == "NetworkChaos")
    for bad in ({**good["spec"], "action": "slow"}, {**good["spec"], "latency": "10ms"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft4Validator(schema).validate({"apiVersion": good["apiVersion"], "kind": "NetworkChaos", "spec": bad})


def _path_table(name: str) -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = {}
    for line in (UPSTREAM / name).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        kind, path, typ, *attrs = line.split("\t")
        table.setdefault(kind, {})[path] = typ + ("\t" + attrs[0] if attrs else "")
    return table


def _walk(value, path: str, table: dict[str, str], problems: list[str]) -> None:
    if path not in table:
        problems.append(f"{path} is not a field of the upstream CRD")
        return
    typ = table[path].split("\t")[0]
    attrs = table[path].split("\t")[1] if "\t" in table[path] else ""
    if "enum=" in attrs:
        allowed = attrs.split("enum=")[1].split()[0].split("|")
        if str(value) not in allowed:
            problems.append(f"{path}={value!r} is not one of {allowed}")
    if isinstance(value, dict):
        if typ != "object":
            problems.append(f"{path} is {typ} upstream, we set an object")
            return
        if not any(p.startswith(path + ".") for p in table):
            return  # a free-form map (additionalProperties): any key
        for k, v in value.items():
            sub = f"{path}.{k}"
            if sub not in table and f"{path}.*" in table:
                sub = f"{path}.*"
            elif sub not in table and "preserve" in attrs:
                continue
            _walk(v, sub, table, problems)
    elif isinstance(value, list):
        if typ != "array":
            problems.append(f"{path} is {typ} upstream, we set a list")
            return
        if f"{path}[]" not in table:
            return  # a list of scalars
        for v in value:
            _walk(v, f"{path}[]", table, problems)


@pytest.mark.parametrize("table_file,api", [("mariadb-operator-v26.6.0-paths.txt", "k8s.mariadb.com/v1alpha1"),
                                            ("cockroach-operator-v2.18.3-paths.txt", "crdb.cockroachlabs.com/v1alpha1")])
def test_operator_objects_use_only_upstream_fields(table_file, api):
    table = _path_table(table_file)
    objs = [o for o in rendered() if o["apiVersion"] == api]
    assert objs
    problems: list[str] = []
    for o in objs:
        _walk(o["spec"], "spec", table[o["kind"]], problems)
    assert not problems, sorted(set(problems))
