"""crds/ is what the models generate, and every CRD is a structural schema."""

from __future__ import annotations

from pathlib import Path

import yaml

from wanwide.crds import crd_files, crds

ROOT = Path(__file__).resolve().parents[1]


def test_crds_dir_is_up_to_date():
    want = crd_files()
    have = {p.name: p.read_text() for p in (ROOT / "crds").glob("*.yaml")}
    assert set(have) == set(want), "crds/ has other files than the models generate: run `wanwide crds --out crds`"
    for name, text in want.items():
        assert have[name] == text, f"crds/{name} is stale: run `wanwide crds --out crds`"


def test_chart_crds_are_the_same_files():
    chart = ROOT / "charts" / "wanwide" / "files" / "crds"
    for name, text in crd_files().items():
        assert (chart / name).read_text() == text, f"charts/wanwide/files/crds/{name} is stale: run hack/gen.sh"


def _walk(node: dict, path: str = "schema") -> None:
    """Check one schema node and its sub-schemas (properties, items, additionalProperties)."""
    for bad in ("anyOf", "oneOf", "allOf", "$ref", "title", "const"):
        assert bad not in node, f"{path} has {bad}: not structural"
    if not node.get("x-kubernetes-int-or-string"):
        assert "type" in node, f"{path}: no type"
    if node.get("type") == "object":
        assert "properties" in node or "additionalProperties" in node or node.get(
            "x-kubernetes-preserve-unknown-fields"), f"{path}: object without a schema"
        assert not ("properties" in node and "additionalProperties" in node), f"{path}: both kinds of properties"
    for name, sub in node.get("properties", {}).items():
        _walk(sub, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        _walk(node["additionalProperties"], f"{path}.*")
    if "items" in node:
        _walk(node["items"], f"{path}[]")


def test_structural_and_printable():
    for crd in crds():
        v = crd["spec"]["versions"][0]
        _walk(v["schema"]["openAPIV3Schema"]["properties"]["spec"], crd["metadata"]["name"])
        assert v["subresources"] == {"status": {}}
        assert any(c["name"] == "Age" for c in v["additionalPrinterColumns"])
        yaml.safe_dump(crd)


def test_benchmark_columns_show_phase_progress_backend():
    bench = next(c for c in crds() if c["spec"]["names"]["kind"] == "Benchmark")
    cols = {c["name"]: c["jsonPath"] for c in bench["spec"]["versions"][0]["additionalPrinterColumns"]}
    assert cols["Phase"] == ".status.phase" and cols["Progress"] == ".status.progress"
    # what the trials run (a sweep's values), not spec.database.backend the matrix overrides
    assert cols["Backend"] == ".status.backend" and cols["Load"] == ".status.load"
    assert cols["Left"] == ".status.timeLeft"


def test_field_reference_is_up_to_date():
    from wanwide.docs import reference

    assert (ROOT / "docs" / "reference.md").read_text() == reference(), "docs/reference.md is stale: run hack/gen.sh"


def _rules(node: object) -> list[str]:
    """Every CEL rule and OpenAPI pattern below ``node``."""
    out: list[str] = []
    if isinstance(node, dict):
        out += [v["rule"] for v in node.get("x-kubernetes-validations", [])]
        if isinstance(node.get("pattern"), str):
            out.append(node["pattern"])
        for v in node.values():
            out += _rules(v)
    elif isinstance(node, list):
        for v in node:
            out += _rules(v)
    return out


def test_every_regex_compiles_in_re2():
    """The API server compiles CEL's matches() and OpenAPI patterns with RE2: a counted repetition over 1000
    (``{1,1024}``), a lookaround or a back-reference makes it refuse the whole CRD at install."""
    import re

    rules = [r for crd in crds() for r in _rules(crd["spec"]["versions"][0]["schema"])]
    assert len(rules) > 50
    for rule in rules:
        for m in re.finditer(r"\{(\d+)(?:,(\d*))?\}", rule):
            assert max(int(m.group(1)), int(m.group(2) or 0)) <= 1000, f"repetition over 1000 in {rule}"
        assert not re.search(r"\(\?[=!<]|\\[1-9]", rule), f"lookaround or back-reference in {rule}"
