"""What hack/e2e-kind.sh applies, checked without kind: the Benchmark is valid for
``wanwide plan``, every pod it plans fits one of the kind workers, and the results
target, bucket, keys and image agree with what the script sets up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KIND = REPO / "hack" / "e2e-kind"
WANWIDE = Path(sys.executable).parent / "wanwide"


def wanwide_plan(path: Path) -> tuple[str, list[dict]]:
    """``wanwide plan -f PATH`` (the CLI, this checkout's code): its header and documents."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "operator"), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([str(WANWIDE), "plan", "-f", str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout, [d for d in yaml.safe_load_all(r.stdout) if d]


def workers() -> list[dict[str, str]]:
    """The labels of each kind worker node (its own and the kubelet's well-known one)."""
    nodes = yaml.safe_load((KIND / "kind.yaml").read_text())["nodes"]
    return [{"kubernetes.io/os": "linux", **n.get("labels", {})} for n in nodes if n["role"] == "worker"]


def selectors(doc: object) -> list[dict[str, str]]:
    """Every node selector in a planned document: ``nodeSelector`` maps and the keystone
    chart's ``node_selector_key``/``node_selector_value`` pairs."""
    out: list[dict[str, str]] = []
    if isinstance(doc, dict):
        if isinstance(doc.get("nodeSelector"), dict):
            out.append(doc["nodeSelector"])
        if "node_selector_key" in doc:
            out.append({doc["node_selector_key"]: doc["node_selector_value"]})
        for v in doc.values():
            out += selectors(v)
    elif isinstance(doc, list):
        for v in doc:
            out += selectors(v)
    return out


def unschedulable(docs: list[dict], nodes: list[dict[str, str]]) -> list[dict[str, str]]:
    """The planned node selectors no worker satisfies."""
    return [s for d in docs for s in selectors(d)
            if not any(all(n.get(k) == v for k, v in s.items()) for n in nodes)]


def results_docs() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all((REPO / "manifests" / "deps" / "s3.yaml").read_text())}


def benchmark_spec() -> dict:
    return next(d for d in yaml.safe_load_all((KIND / "benchmark.yaml").read_text()) if d["kind"] == "Benchmark")["spec"]


def test_the_kind_benchmark_plans_one_trial_that_fits_the_workers():
    header, docs = wanwide_plan(KIND / "benchmark.yaml")
    assert "1 trials" in header and "regions=3" in header, header
    regions = {d["metadata"]["labels"]["wanwide.io/region"] for d in docs if d.get("kind") == "Namespace"}
    assert len(regions) == 3 <= len(workers())
    # every pod is pinned (placement regionLabel) and lands on a worker
    assert len(selectors(docs)) >= 3 * len(regions)
    assert unschedulable(docs, workers()) == []


def test_the_examples_fit_three_workers_as_written_and_a_region_without_a_worker_is_caught(tmp_path):
    """uniform-9 as written (placement none, the default) runs on 3 workers; pinned by the region
    label, r4..r9 would have nowhere to run."""
    _, docs = wanwide_plan(REPO / "manifests" / "examples" / "uniform-9.yaml")
    assert not [s for s in selectors(docs) if "wanwide.io/region" in s]
    assert unschedulable(docs, workers()) == []
    text = (REPO / "manifests" / "examples" / "uniform-9.yaml").read_text()
    f = tmp_path / "pinned.yaml"
    f.write_text(text.replace("  network:", "  placement: {mode: regionLabel}\n  network:", 1))
    _, docs = wanwide_plan(f)
    missing = {v for s in unschedulable(docs, workers()) for v in s.values()}
    assert missing == {f"r{i}" for i in range(4, 10)}


def test_results_target_keys_and_bucket_are_what_the_script_sets_up():
    s3 = benchmark_spec()["results"]["s3"]
    r = results_docs()
    url = urlparse(s3["endpoint"])
    svc = r["Service"]["metadata"]
    assert url.hostname == f"{svc['name']}.{svc['namespace']}.svc"
    assert url.port == r["Service"]["spec"]["ports"][0]["port"]
    server = r["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert server["args"][server["args"].index("--port") + 1] == f":{url.port}"
    root = {e["name"]: e["value"] for e in server["env"]}
    job = r["Job"]["spec"]["template"]["spec"]["containers"][0]
    job_env = {e["name"]: e["value"] for e in job["env"]}
    assert job_env["S3_ENDPOINT"] == s3["endpoint"] and job_env["BUCKET"] == s3["bucket"]
    secret = r["Secret"]
    # the Secret is in the namespace the script applies the Benchmark to and the chart watches
    assert secret["metadata"] == {"name": s3["secretRef"]["name"], "namespace": "default"}
    assert 'ns=${E2E_NAMESPACE:-default}' in (REPO / "hack" / "e2e-kind.sh").read_text()
    keys = (root["ROOT_ACCESS_KEY"], root["ROOT_SECRET_KEY"])
    assert (secret["stringData"]["AWS_ACCESS_KEY_ID"], secret["stringData"]["AWS_SECRET_ACCESS_KEY"]) == keys
    assert (job_env["AWS_ACCESS_KEY_ID"], job_env["AWS_SECRET_ACCESS_KEY"]) == keys


def test_the_image_kind_loads_is_the_one_the_chart_the_runner_and_the_bucket_job_use():
    app_version = yaml.safe_load((REPO / "charts" / "wanwide" / "Chart.yaml").read_text())["appVersion"]
    values = yaml.safe_load((REPO / "charts" / "wanwide" / "values.yaml").read_text())["image"]
    image = f"{values['repository']}:{app_version}"
    assert re.search(r"^img=ghcr\.io/wanwide/wanwide:\$app_version\b", (REPO / "hack" / "e2e-kind.sh").read_text(), re.M)
    assert image == f"ghcr.io/wanwide/wanwide:{app_version}"
    _, docs = wanwide_plan(KIND / "benchmark.yaml")
    runner = [c["image"] for d in docs if d.get("kind") == "Job" for c in d["spec"]["template"]["spec"]["containers"]]
    assert runner and set(runner) == {image}  # the Rally Job and the pairs' watch Jobs: the one image
    assert results_docs()["Job"]["spec"]["template"]["spec"]["containers"][0]["image"] == image


@pytest.mark.parametrize("cmd", ["nonsense", "help"])
def test_the_script_names_its_commands_on_a_wrong_one(cmd):
    r = subprocess.run([str(REPO / "hack" / "e2e-kind.sh"), cmd], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "hack/e2e-kind.sh wait NAME" in r.stderr and "E2E_TIMEOUT" in r.stderr
