"""hack/deps.sh, the dependencies in one step: what it would run (``plan``), from the public
repositories at the pinned versions or from copies given by the user, and the S3 manifest it applies.
It has not run against a cluster here yet (docs/verification.md)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "hack" / "deps.sh"


def plan(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "plan", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def commands(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [line[2:] for line in r.stderr.splitlines() if line.startswith("+ ")]


def test_from_the_public_repositories_at_the_pinned_versions():
    r = plan()
    assert r.returncode == 0, r.stderr
    helm = [c for c in commands(r) if c.startswith("helm ")]
    assert [c.split()[3:5] for c in helm] == [["chaos-mesh", "chaos-mesh"], ["mariadb-operator-crds", "mariadb-operator-crds"],
                                              ["mariadb-operator", "mariadb-operator"]]
    assert "--repo https://charts.chaos-mesh.org --version 2.8.3" in helm[0]
    assert "chaosDaemon.runtime=containerd" in helm[0] and "socketPath=/run/containerd/containerd.sock" in helm[0]
    assert "dashboard.create=false" in helm[0] and "dnsServer.create=false" in helm[0]  # not what wanwide uses
    assert all("--repo https://mariadb-operator.github.io/mariadb-operator --version 26.6.0" in c for c in helm[1:])
    assert "crds.enabled=false" in helm[2]
    assert any(c.startswith("kubectl -n wanwide-system wait --for=condition=complete job/s3-bucket") for c in commands(r))
    # an empty cluster has no wanwide-system: it is made before the S3 server goes in
    cmds = commands(r)
    # (the two sides of a pipe print their "+" lines in either order; pipelines run one after another)
    made = cmds.index("kubectl create namespace wanwide-system --dry-run=client -o yaml")
    applies = [i for i, c in enumerate(cmds) if c == "kubectl apply -f -"]
    assert len(applies) == 2 and made < applies[-1]
    assert "helm install wanwide charts/wanwide" in r.stderr  # what to do next


def test_copies_given_by_the_user_replace_the_repositories(tmp_path):
    chart = tmp_path / "chaos-mesh"
    chart.mkdir()
    values = tmp_path / "values.yaml"
    values.write_text("images: {registry: example.org}\n")
    r = plan("--only", "chaos-mesh", "--runtime", "docker", CHAOS_MESH_CHART=str(chart), CHAOS_MESH_VALUES=str(values))
    assert r.returncode == 0, r.stderr
    (helm,) = commands(r)
    assert f"helm upgrade --install chaos-mesh {chart} -n chaos-mesh" in helm and "--repo" not in helm
    assert helm.endswith(f"-f {values}") and "socketPath=/var/run/docker.sock" in helm
    r = plan("--only", "chaos-mesh", CHAOS_MESH_CHART=str(tmp_path / "nope"))
    assert r.returncode == 2 and f"CHAOS_MESH_CHART={tmp_path / 'nope'}: no such chart directory" in r.stderr


def test_bad_options_say_what_to_give():
    r = plan("--runtime", "podman")
    assert r.returncode == 2 and "give containerd, docker or crio" in r.stderr
    r = plan("--only", "chaos-mesh,istio")
    assert r.returncode == 2 and "istio is not one of chaos-mesh, mariadb-operator, s3, monitoring" in r.stderr


def test_another_namespace_gets_the_key_secret_and_monitoring_is_asked_for():
    r = plan("-n", "lab", "--monitoring", "--no-s3")
    cmds = commands(r)
    assert r.returncode == 0 and not any("s3-bucket" in c for c in cmds)
    assert any("kube-prometheus-stack --repo https://prometheus-community.github.io/helm-charts" in c for c in cmds)
    r = plan("-n", "lab", "--only", "s3")
    assert "kubectl create namespace lab --dry-run=client -o yaml" in commands(r)
    assert "watchNamespaces={lab}" in r.stderr


def test_the_images_it_can_replace_are_those_of_the_manifest():
    text = SCRIPT.read_text()
    manifest = (REPO / "manifests" / "deps" / "s3.yaml").read_text()
    for var in ("S3_DEFAULT_IMAGE", "BUCKET_DEFAULT_IMAGE"):
        image = re.search(rf"^{var}=(\S+)", text, re.M).group(1)
        assert f"image: {image}\n" in manifest, (var, image)


def test_one_versitygw_everywhere():
    """The S3 server the manifest names, the image built here and the test cluster's own are one version."""
    manifest = (REPO / "manifests" / "deps" / "s3.yaml").read_text()
    tag = re.search(r"image: versity/versitygw:(\S+)", manifest).group(1)
    for script in ("hack/images.sh", "hack/testcluster/build.sh"):
        assert re.search(r"^VERSITYGW_VERSION=(\S+)", (REPO / script).read_text(), re.M).group(1) == tag, script


def test_the_kind_e2e_installs_through_it():
    text = (REPO / "hack" / "e2e-kind.sh").read_text()
    assert '"$root/hack/deps.sh" install --only chaos-mesh,mariadb-operator,monitoring' in text
    assert '"$root/hack/deps.sh" install --only s3 -n "$ns"' in text
    assert "helm repo add" not in text  # one place says where the charts come from
