"""The GitHub Actions workflows: actionlint (built from its Go module by hack/actionlint.sh,
shellcheck on every ``run:`` block) and SchemaStore's github-workflow schema (vendored by
check-jsonschema) find nothing, and they say what the project promises: lint and unit
tests on every push and pull request, the kind e2e through hack/e2e-kind.sh, releases
from ``v*`` tags, actions pinned to a major version, least privilege."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))


def load(name: str) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); give it its name back
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True)
    return doc


def steps(doc: dict) -> list[dict]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "hack" / "actionlint.sh"), *map(str, files)], capture_output=True,
                          text=True, timeout=900)


def test_there_are_the_three_workflows():
    assert [f.name for f in FILES] == ["ci.yml", "e2e-kind.yml", "release.yml"]


def test_actionlint_finds_nothing():
    r = actionlint()
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_reports_a_wrong_input_and_a_shellcheck_finding(tmp_path):
    text = (WORKFLOWS / "ci.yml").read_text()
    bad = tmp_path / "bad.yml"
    bad.write_text(text.replace("python-version: ${{ env.PYTHON_VERSION }}", "pyton-version: '3.11'", 1)
                   .replace("run: hack/actionlint.sh", "run: echo $HOME/$(ls)", 1))
    r = actionlint(bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'input "pyton-version" is not defined in action "actions/setup-python@v5"' in r.stdout
    assert "SC2046" in r.stdout  # shellcheck ran on the run: block


def check_jsonschema(*files: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run([str(exe), "--builtin-schema", "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_schemastore_github_workflow_schema(tmp_path):
    r = check_jsonschema(*FILES)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text((WORKFLOWS / "ci.yml").read_text().replace("runs-on:", "runs_on:", 1))
    r = check_jsonschema(bad)
    assert r.returncode == 1 and "'runs-on' is a required property" in r.stdout, r.stdout


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_actions_pinned_to_a_major_and_permissions_minimal(path):
    doc = load(path.name)
    for s in steps(doc):
        if "uses" in s:
            # a major tag, or a release for an action that publishes no major tag (pypi-publish)
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+(\.\d+\.\d+)?", s["uses"]), s["uses"]
    assert doc["permissions"] == {"contents": "read"}
    for name, job in doc["jobs"].items():
        extra = {k: v for k, v in job.get("permissions", {}).items() if v != "read"}
        assert extra in ({}, {"packages": "write"}, {"id-token": "write"}), (name, extra)
        if "id-token" in extra:  # trusted publishing: only the PyPI job, in its own environment
            assert name == "pypi" and job.get("environment") == "pypi", (name, job.get("environment"))


def test_ci_lints_and_runs_the_unit_tier_on_every_push_and_pull_request():
    doc = load("ci.yml")
    assert set(doc["on"]) == {"push", "pull_request"} and not any(doc["on"].values())
    runs = " ".join(s.get("run", "") for s in steps(doc))
    for cmd in ("ruff check operator tests bench", "shellcheck -x hack/*.sh", "hack/actionlint.sh",
                "helm lint --strict charts/wanwide",
                '-m "not lab and not cluster and not realnode and not images and not install"'):
        assert cmd in runs, cmd
    # the Python the package declares, the lock and the image are for
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == f">={doc['env']['PYTHON_VERSION']}"
    assert f"python:{doc['env']['PYTHON_VERSION']}-" in (REPO / "Dockerfile").read_text()
    assert f"for Python {doc['env']['PYTHON_VERSION']}." in (REPO / "requirements" / "wanwide.lock").read_text()


def test_e2e_kind_runs_the_script_on_the_scripts_cluster():
    doc = load("e2e-kind.yml")
    kind = next(s for s in steps(doc) if s.get("uses", "").startswith("helm/kind-action@"))
    assert kind["with"]["config"] == "hack/e2e-kind/kind.yaml"
    assert kind["with"]["cluster_name"] == "${{ env.KIND_CLUSTER }}"
    runs = [s["run"] for s in steps(doc) if "run" in s]
    assert runs[:5] == [f"hack/e2e-kind.sh {c}" for c in ("image", "deps", "results", "operator", "run")]
    assert any("hack/e2e-kind.sh diagnose" in r for r in runs)


def test_release_publishes_image_and_chart_at_the_tags_version():
    doc = load("release.yml")
    assert doc["on"] == {"push": {"tags": ["v*"]}}
    uses = [s.get("uses", "").split("@")[0] for s in steps(doc)]
    assert {"docker/login-action", "docker/metadata-action", "docker/build-push-action"} <= set(uses)
    run = "\n".join(s.get("run", "") for s in steps(doc))
    assert "version=${GITHUB_REF_NAME#v}" in run
    assert 'helm package charts/wanwide --version "$version" --app-version "$version"' in run
    assert re.search(r'helm push "\$PACKAGE" "oci://ghcr\.io/\$OWNER/charts"', run)
    # the repository line the release rewrites is the chart's
    values = (REPO / "charts" / "wanwide" / "values.yaml").read_text()
    assert re.search(r"^  repository: ghcr\.io/wanwide/wanwide$", values, re.M)
