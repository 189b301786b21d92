"""The set-up scripts on a machine that has nothing yet, and on one that has everything.

The system tools they call are stubbed: ``dpkg-query`` answers from a state file
(nothing installed at first, exit 1 as the real one does for unknown packages),
``apt-get``, ``go`` and the venvs' ``pip`` record what they are asked and make
what a real install would leave behind. The scripts themselves run unmodified.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAB_APT = ["mariadb-server", "mariadb-client", "galera-4", "rsync", "memcached", "vde2", "gcc", "libc6-dev",
           "iproute2",
           "iputils-ping", "socat", "procps", "psmisc", "iptables", "iperf3"]

STUBS = {
    "dpkg-query": r"""
        # dpkg-query -W -f=FORMAT PKG...: answers from $STUB/installed
        fmt=""; pkgs=()
        for a in "$@"; do case $a in -W) ;; -f=*) fmt=${a#-f=} ;; *) pkgs+=("$a") ;; esac; done
        rc=0
        for p in "${pkgs[@]}"; do
          if grep -qx "$p" "$STUB/installed" 2>/dev/null; then
            case $fmt in *Status*) echo "$p install ok installed" ;; *) printf '1.0-stub' ;; esac
          else
            echo "dpkg-query: no packages found matching $p" >&2; rc=1
          fi
        done
        exit $rc
    """,
    "apt-get": r"""
        echo "apt-get $*" >>"$STUB/calls"
        [ -n "${STUB_APT_FAIL:-}" ] && { echo "E: Unable to locate package $STUB_APT_FAIL"; exit 100; }
        install=0
        for a in "$@"; do
          case $a in install) install=1 ;; -*|*=*) ;; *) [ $install = 1 ] && echo "$a" >>"$STUB/installed" ;; esac
        done
        exit 0
    """,
    "id": r"""[ "${1:-}" = -u ] && { echo 0; exit 0; }; exec /usr/bin/id "$@" """,
    "go": r"""
        echo "go $*" >>"$STUB/calls"
        case "$1" in
          install) pkg=${!#}; base=${pkg%@*}; base=${base##*/}; mkdir -p "$GOBIN"; : >"$GOBIN/$base"; chmod +x "$GOBIN/$base" ;;
          build) prev=""; for a in "$@"; do [ "$prev" = -o ] && { : >"$a"; chmod +x "$a"; }; prev=$a; done ;;
          mod)
            gm="$STUB/kubernetes.go.mod"
            printf 'module k8s.io/kubernetes\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n)\n' >"$gm"
            printf '{"Path": "k8s.io/kubernetes", "Dir": "%s", "GoMod": "%s"}\n' "$STUB" "$gm" ;;
        esac
        exit 0
    """,
    "python": r"""
        # a python3 whose -m venv makes a venv of stubs
        if [ "$1" = -c ]; then echo "3.11.7 (stub)"; exit 0; fi
        if [ "$1" = -m ] && [ "$2" = venv ]; then
          mkdir -p "$3/bin"
          printf '#!/bin/sh\necho "python $*" >>"$STUB/calls"\n' >"$3/bin/python"
          printf '#!/bin/sh\necho "pip $*" >>"$STUB/calls"\n[ -n "$STUB_PIP_FAIL" ] && { echo "ERROR: $STUB_PIP_FAIL"; exit 1; }\nexit 0\n' >"$3/bin/pip"
          chmod +x "$3/bin/python" "$3/bin/pip"
          echo "python -m venv $3" >>"$STUB/calls"
          exit 0
        fi
        echo "unexpected python call: $*" >&2; exit 99
    """,
}


class Machine:
    """A stubbed machine: PATH with the stubs first, its own cache and apt state."""

    def __init__(self, tmp: Path, installed: list[str] | None = None):
        self.stub = tmp / "stub"
        self.bin = tmp / "bin"
        self.cache = tmp / "cache"
        for d in (self.stub, self.bin, self.cache):
            d.mkdir()
        for name, body in STUBS.items():
            f = self.bin / name
            f.write_text("#!/bin/bash\n" + textwrap.dedent(body).strip() + "\n")
            f.chmod(0o755)
        (self.stub / "installed").write_text("".join(f"{p}\n" for p in installed or []))
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(tmp), "STUB": str(self.stub),
            "WANWIDE_CACHE": str(self.cache), "PYTHON": str(self.bin / "python"),
            "APT_POLICY_RC_D": str(tmp / "policy-rc.d"), "TMPDIR": str(tmp),
            "WANWIDE_VENV": str(tmp / "venv"), "APT_RECORD": str(tmp / "apt-installed.txt"),
        }

    def run(self, *cmd: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), env={**self.env, **extra}, capture_output=True, text=True,
                              timeout=120, cwd=REPO)

    def calls(self) -> list[str]:
        f = self.stub / "calls"
        return f.read_text().splitlines() if f.exists() else []

    def take_calls(self) -> list[str]:
        c = self.calls()
        (self.stub / "calls").unlink(missing_ok=True)
        return c


def apt_installs(calls: list[str]) -> list[list[str]]:
    return [[a for a in shlex.split(c)[1:] if not a.startswith("-") and "=" not in a][1:]
            for c in calls if c.startswith("apt-get ") and " install " in c]


def test_install_lab_from_nothing_then_everything(tmp_path):
    m = Machine(tmp_path)
    r = m.run(str(REPO / "hack" / "install-lab.sh"))
    assert r.returncode == 0, r.stderr
    calls = m.take_calls()
    # every lab package installed in one apt-get call, no service started meanwhile
    assert apt_installs(calls) == [LAB_APT]
    assert not (tmp_path / "policy-rc.d").exists(), "policy-rc.d left behind"
    # recorded, so that hack/from-scratch.sh --purge removes exactly these
    assert (tmp_path / "apt-installed.txt").read_text().split() == LAB_APT
    # every venv from its requirements file, constrained by its lock; the rest of a control plane only when asked
    assert not (m.cache / "venvs" / "openstack").exists() and not any("requirements/openstack" in c for c in calls)
    for name in ("keystone", "rally"):
        venv = m.cache / "venvs" / name
        assert f"python -m venv {venv}" in calls
        pip = [c for c in calls if c.startswith("pip install") and f"requirements/{name}.txt" in c]
        assert len(pip) == 1 and f"-c {REPO}/requirements/{name}.lock" in pip[0], calls
    assert any(c.startswith("go install github.com/versity/versitygw/cmd/versitygw@v1.8.0") for c in calls)
    assert os.access(m.cache / "bin" / "versitygw-v1.8.0", os.X_OK)

    # second run: everything there, nothing asked of apt, pip or go
    r = m.run(str(REPO / "hack" / "install-lab.sh"))
    assert r.returncode == 0, r.stderr
    assert m.take_calls() == []
    assert f"all {len(LAB_APT)} package(s) present" in r.stderr
    assert "venv keystone: present" in r.stderr and "versitygw: present" in r.stderr


def test_install_lab_openstack_adds_the_bus_and_the_services_venv(tmp_path):
    """--openstack (spec.openstack beyond Keystone): rabbitmq-server in the same one apt call, venv "openstack"
    from its requirements and lock; then a warm re-run asks nothing; an unknown argument is one line."""
    m = Machine(tmp_path)
    r = m.run(str(REPO / "hack" / "install-lab.sh"), "--openstack", WANWIDE_LAB_SKIP_S3="1")
    assert r.returncode == 0, r.stderr
    calls = m.take_calls()
    assert apt_installs(calls) == [[*LAB_APT, "rabbitmq-server"]]
    for name in ("keystone", "rally", "openstack"):
        pip = [c for c in calls if c.startswith("pip install") and f"requirements/{name}.txt" in c]
        assert len(pip) == 1 and f"-c {REPO}/requirements/{name}.lock" in pip[0], calls
    r = m.run(str(REPO / "hack" / "install-lab.sh"), WANWIDE_LAB_SKIP_S3="1", WANWIDE_LAB_OPENSTACK="1")
    assert r.returncode == 0 and m.take_calls() == [], r.stderr
    r = m.run(str(REPO / "hack" / "install-lab.sh"), "--nova")
    assert r.returncode == 2 and "unknown argument --nova (the only one is --openstack)" in r.stderr


def test_install_lab_installs_only_what_is_missing(tmp_path):
    m = Machine(tmp_path, installed=["mariadb-server", "rsync", "iproute2", "procps"])
    r = m.run(str(REPO / "hack" / "install-lab.sh"), WANWIDE_LAB_SKIP_S3="1")
    assert r.returncode == 0, r.stderr
    want = [p for p in LAB_APT if p not in ("mariadb-server", "rsync", "iproute2", "procps")]
    calls = m.calls()
    assert apt_installs(calls) == [want]
    assert not any(c.startswith("go ") for c in calls)


def test_failing_apt_names_the_step_and_shows_the_log(tmp_path):
    m = Machine(tmp_path)
    r = m.run(str(REPO / "hack" / "install-lab.sh"), STUB_APT_FAIL="galera-4")
    assert r.returncode != 0
    assert "apt-get install mariadb-server" in r.stderr  # which step
    assert "Unable to locate package galera-4" in r.stderr  # the log's last lines
    assert str(m.cache / "logs" / "apt.log") in r.stderr  # where to read more
    assert not (tmp_path / "policy-rc.d").exists()


def test_failing_pip_names_the_venv_step_and_its_log(tmp_path):
    m = Machine(tmp_path, installed=LAB_APT)
    r = m.run(str(REPO / "hack" / "install-lab.sh"), STUB_PIP_FAIL="No matching distribution for keystone==30.0.0")
    assert r.returncode != 0
    assert 'FAILED in step "venv keystone' in r.stderr
    assert "No matching distribution for keystone==30.0.0" in r.stderr
    assert "venv-keystone.log" in r.stderr
    # nothing recorded as done: the next run tries again
    assert not list((m.cache / "stamps").glob("venv-keystone-*"))


def test_python_env_uses_the_lock_with_the_venvs_own_pip(tmp_path):
    m = Machine(tmp_path)
    r = m.run(str(REPO / "hack" / "python-env.sh"))
    assert r.returncode == 0, r.stderr
    calls = m.take_calls()
    pip = [c for c in calls if c.startswith("pip ")]
    assert pip == [f"pip install --disable-pip-version-check -c {REPO}/requirements/wanwide.lock -e {REPO}[test]"]
    r = m.run(str(REPO / "hack" / "python-env.sh"))
    assert r.returncode == 0 and m.calls() == []


def test_testcluster_build_from_an_empty_cache(tmp_path):
    m = Machine(tmp_path)
    r = m.run(str(REPO / "hack" / "testcluster" / "build.sh"), GO=str(m.bin / "go"))
    assert r.returncode == 0, r.stderr
    calls = m.take_calls()
    built = {c.split()[-1] for c in calls if c.startswith("go build")}
    assert built == {"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
                     "k8s.io/kubernetes/cmd/kube-scheduler", "go.etcd.io/etcd/server/v3"}
    installed = {c.split()[-1] for c in calls if c.startswith("go install")}
    helm_build = next(c for c in calls if c.startswith("go install") and "cmd/helm@" in c)
    # helm assumes Kubernetes 1.37 without a cluster (as released binaries do), not 1.20 (the chart's kubeVersion)
    assert "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37" in helm_build, helm_build
    assert installed == {"sigs.k8s.io/kwok/cmd/kwok@v0.8.0", "helm.sh/helm/v3/cmd/helm@v3.22.0",
                         "github.com/versity/versitygw/cmd/versitygw@v1.8.0"}
    cached = sorted(p.name for p in (m.cache / "bin").iterdir())
    assert cached == sorted(["etcd-v3.6.16", "helm-v3.22.0-kube1.37", "kube-apiserver-v1.34.4",
                             "kube-controller-manager-v1.34.4", "kube-scheduler-v1.34.4", "kwok-v0.8.0",
                             "versitygw-v1.8.0"])
    # the version is stamped into the Kubernetes binaries (not v0.0.0-master)
    kube = [c for c in calls if c.startswith("go build") and "kube-apiserver" in c][0]
    assert "gitVersion=v1.34.4" in kube
    # cached: a second build asks go for nothing
    r = m.run(str(REPO / "hack" / "testcluster" / "build.sh"), GO=str(m.bin / "go"))
    assert r.returncode == 0 and m.calls() == []


def test_testcluster_build_real_node_only_on_request(tmp_path):
    """`build --real-node`: kubelet and kube-proxy like the control plane, CoreDNS; plain
    `build` never builds them (its time in CI stays the same)."""
    m = Machine(tmp_path)
    build = str(REPO / "hack" / "testcluster" / "build.sh")
    assert m.run(build, GO=str(m.bin / "go")).returncode == 0
    plain = m.take_calls()
    assert not [c for c in plain if "kubelet" in c or "kube-proxy" in c or "coredns" in c]
    r = m.run(build, "--real-node", GO=str(m.bin / "go"))
    assert r.returncode == 0, r.stderr
    calls = m.take_calls()
    built = {c.split()[-1] for c in calls if c.startswith("go build")}
    assert built == {"k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"}
    for c in calls:
        if c.startswith("go build"):
            assert "gitVersion=v1.34.4" in c and "-mod=mod" in c
    installed = {c.split()[-1] for c in calls if c.startswith("go install")}
    assert installed == {"github.com/coredns/coredns@v1.14.7"}
    cached = {p.name for p in (m.cache / "bin").iterdir()}
    assert {"kubelet-v1.34.4", "kube-proxy-v1.34.4", "coredns-v1.14.7"} <= cached
    assert m.run(build, "--real-node", GO=str(m.bin / "go")).returncode == 0 and m.calls() == []


def test_from_scratch_purges_exactly_what_the_scripts_installed(tmp_path):
    m = Machine(tmp_path)
    assert m.run(str(REPO / "hack" / "install-lab.sh"), WANWIDE_LAB_SKIP_S3="1").returncode == 0
    m.take_calls()
    r = m.run(str(REPO / "hack" / "from-scratch.sh"), "--purge", "--only", "none", str(tmp_path / "scratch"))
    assert r.returncode == 0, r.stderr
    calls = m.calls()
    purge = [c.split() for c in calls if c.startswith("apt-get purge")]
    assert len(purge) == 1 and sorted(a for a in purge[0][2:] if not a.startswith("-")) == sorted(LAB_APT)
    assert any(c.startswith("apt-get autoremove --purge") for c in calls)
    assert not (tmp_path / "apt-installed.txt").exists()
    assert (tmp_path / "scratch" / "wanwide" / "hack" / "lab.sh").exists()  # a fresh clone
    assert (tmp_path / "scratch" / "home").is_dir() and not any((tmp_path / "scratch" / "home").iterdir())


def test_stubs_behave_like_the_real_dpkg_query(tmp_path):
    """The stub's contract, checked against the real tool where it is comparable."""
    m = Machine(tmp_path)
    r = m.run("dpkg-query", "-W", "-f=${Package} ${Status}\n", "wanwide-no-such-package")
    real = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\n", "wanwide-no-such-package"],
                          capture_output=True, text=True)
    assert r.returncode == real.returncode == 1
    assert r.stdout == real.stdout == ""
    assert r.stderr.strip() == real.stderr.strip() == "dpkg-query: no packages found matching wanwide-no-such-package"


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "hack").glob("*.sh") if p.name != "lib.sh"))
def test_scripts_fail_loudly(script):
    """Every set-up script stops on errors (a silent half-install is the bug this guards)."""
    assert "set -euo pipefail" in (REPO / "hack" / script).read_text()


def test_upstream_chart_without_helm_says_so_and_leaves_nothing(tmp_path):
    m = Machine(tmp_path)
    mirror = tmp_path / "mirror" / "openstack-helm-2026.1.0"
    for d in ("keystone", "helm-toolkit"):
        (mirror / d).mkdir(parents=True)
        (mirror / d / "Chart.yaml").write_text(f"name: {d}\n")
    r = m.run(str(REPO / "hack" / "upstream-charts.sh"), "path", "keystone",
              WANWIDE_UPSTREAM_DIR=str(mirror.parent))
    assert r.returncode == 1
    assert "no helm (hack/testcluster.sh build makes one; or set HELM)" in r.stderr
    assert not (m.cache / "charts").exists()  # no half-built chart copy left behind
    r = m.run(str(REPO / "hack" / "upstream-charts.sh"), "path", "keystone",
              WANWIDE_UPSTREAM_DIR=str(tmp_path / "no-mirror"))
    assert r.returncode == 1 and "no-mirror/openstack-helm-2026.1.0 missing" in r.stderr


IMAGE_TOOLS = ["mmdebstrap", "buildah", "containerd", "runc", "gcc", "libc6-dev", "git", "ca-certificates", "cpio"]


def test_images_from_nothing_installs_its_tools_into_a_cache_it_makes(tmp_path):
    """Issue 24: on a fresh machine hack/images.sh stopped at its tools step (its apt log named a folder it
    made on the next line). From an empty cache it installs exactly its tools, logs apt where it says, and
    answers; a second run asks apt for nothing."""
    m = Machine(tmp_path)
    assert not m.cache.joinpath("images").exists()
    r = m.run(str(REPO / "hack" / "images.sh"), "key", "pause", GO=str(m.bin / "go"))
    assert r.returncode == 0, r.stderr
    assert apt_installs(m.take_calls()) == [IMAGE_TOOLS]
    assert (m.cache / "images" / "logs" / "apt.log").is_file()
    assert len(r.stdout.strip()) == 64  # the content key of the pause image
    r = m.run(str(REPO / "hack" / "images.sh"), "key", "pause", GO=str(m.bin / "go"))
    assert r.returncode == 0 and apt_installs(m.take_calls()) == [], r.stderr


def test_the_real_node_gate_on_a_cold_machine_says_what_is_not_built_and_skips(tmp_path):
    """hack/test.sh's last step (hack/e2e-real.sh --gate --if-warm) on a machine where nothing is built: it
    names what is missing and why it does not build it here, builds nothing and passes."""
    m = Machine(tmp_path)
    r = m.run(str(REPO / "hack" / "e2e-real.sh"), "--gate", "--if-warm", GO=str(m.bin / "go"))
    assert r.returncode == 0, r.stderr
    assert ("SKIPPED: not built yet: binary kubelet binary kube-proxy binary coredns "
            "the image tools (mmdebstrap, buildah)") in r.stderr
    assert "CI's 90 minutes" in r.stderr and "hack/e2e-real.sh once" in r.stderr
    assert m.calls() == []  # nothing installed, nothing built


def test_the_image_builds_the_same_helm_as_the_test_cluster():
    """One helm: the version and the Kubernetes version it assumes without a cluster (helm template of a
    chart with a kubeVersion) are the same in the image and in hack/testcluster/build.sh."""
    build = (REPO / "hack" / "testcluster" / "build.sh").read_text()
    docker = (REPO / "Dockerfile").read_text()
    version = re.search(r"(?m)^HELM_VERSION=(\S+)$", build).group(1)
    minor = re.search(r"(?m)^HELM_KUBE_MINOR=(\d+)$", build).group(1)
    assert f"helm.sh/helm/v3/cmd/helm@{version}" in docker
    for pkg in ("pkg/chartutil", "pkg/lint/rules"):
        assert f"-X helm.sh/helm/v3/{pkg}.k8sVersionMinor={minor}" in docker, pkg


def _shell_function(path: Path, name: str) -> str:
    """The text of shell function NAME in PATH: one line ``NAME() { ...; }``, or to the first ``}`` at column 0."""
    m = re.search(rf"^{name}\(\) {{[^\n]*}}$|^{name}\(\) {{.*?^}}$", path.read_text(), re.M | re.S)
    assert m, f"{name} not in {path}"
    return m.group(0)


@pytest.mark.parametrize("answers, ok", [
    # a CRD whose status the API server has not written yet (no conditions), then Established: waited for
    (["a.example.io True\nb.example.io \n", "a.example.io True\nb.example.io True\n"], True),
    (["a.example.io True\nb.example.io False\n"], False),  # never Established: one line naming it
])
def test_the_test_cluster_waits_for_crds_without_status_instead_of_failing(tmp_path, answers, ok):
    """CI saw ``kubectl wait --for condition=established crd --all`` fail at once on a CRD created a moment
    before (".status.conditions accessor error: <nil> is of the type <nil>"); the test cluster polls instead."""
    tc = REPO / "hack" / "testcluster.sh"
    for i, a in enumerate(answers):
        (tmp_path / f"answer{i}").write_text(a)
    script = "\n".join([
        "set -euo pipefail",
        'log() { echo "$*" >&2; }', _shell_function(tc, "die"), _shell_function(tc, "crds_established"),
        f'kc() {{ n=$(cat {tmp_path}/calls 2>/dev/null || echo 0); echo $((n + 1)) >{tmp_path}/calls; '
        f'f={tmp_path}/answer$n; [[ -f $f ]] || f={tmp_path}/answer{len(answers) - 1}; cat "$f"; }}',
        "crds_established 3", "echo established"])
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    calls = int((tmp_path / "calls").read_text())
    if ok:
        assert r.returncode == 0 and r.stdout.strip() == "established", r.stderr
        assert calls == 2
    else:
        assert r.returncode == 1 and "CRDs not Established after 3 s: b.example.io" in r.stderr, r.stderr
        assert calls >= 3


def test_the_test_cluster_forgets_vm_nodes_whose_vm_is_gone(tmp_path):
    """A VM node taken down while the API server was down left its Node object in etcd; the next ``up`` found it, and
    chaos-daemon's DaemonSet pod on it answered ``kubectl logs ds/chaos-daemon`` with NotFound (stop 56). ``up`` now
    deletes the Node of a VM node with no VM here, and no other node."""
    vn = REPO / "hack" / "testcluster" / "vmnode.sh"
    root = tmp_path / "vmnode"
    (root / "vmn2").mkdir(parents=True)
    (root / "vmn2" / "node.env").write_text("N_POD_CIDR=10.246.3.0/24\n")
    nodes = ("kwok-node-0 \nrealnode wanwide.io/real-node\nvmn1 wanwide.io/real-node wanwide.io/vm-node\n"
             "vmn2 wanwide.io/real-node wanwide.io/vm-node\nother node.kubernetes.io/unreachable\n")
    (tmp_path / "nodes").write_text(nodes)
    script = "\n".join([
        "set -euo pipefail", 'log() { echo "$*" >&2; }', f"VN_ROOT={root} VN_TAINT_KEY=wanwide.io/vm-node",
        f'kc() {{ if [[ $1 == get ]]; then cat {tmp_path}/nodes; else echo "$*" >>{tmp_path}/calls; fi; }}',
        _shell_function(vn, "vn_forget_gone"), "vn_forget_gone"])
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "calls").read_text().splitlines() == ["delete node vmn1 --wait=false"]
    assert "VM node vmn1: its VM is gone" in r.stderr


@pytest.mark.parametrize("real", [False, True])
def test_kwok_plays_chaos_mesh_only_while_the_real_one_is_not_installed(tmp_path, real):
    """kwok's Chaos Mesh Stages and the real Chaos Mesh both wrote the operator's NetworkChaos status (each write a
    new generation, injected again: a WAN never AllInjected on a VM node, stop 55): with the marker that
    ``chaos-standins off`` writes, kwok's configuration has none of them; the other Stages stay."""
    tc = REPO / "hack" / "testcluster.sh"
    k = tmp_path / "kwok"
    general = "  delay:\n    durationMilliseconds: 1000\n    jitterDurationMilliseconds: 5000\n"
    for rel, text in {"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml": "kind: Stage\n",
                      "kustomize/stage/node/fast/node-initialize.yaml": "kind: Stage\n",
                      "kustomize/stage/pod/general/pod-ready.yaml": "kind: Stage\n" + general}.items():
        (k / rel).parent.mkdir(parents=True, exist_ok=True)
        (k / rel).write_text(text)
    state = tmp_path / "state"
    (state / "run").mkdir(parents=True)
    if real:
        (state / "chaos-mesh-real").write_text("the real Chaos Mesh\n")
    script = "\n".join([
        "set -euo pipefail", 'log() { echo "$*" >&2; }', _shell_function(tc, "die"),
        f"module_dir() {{ echo {k}; }}", f"STATE={state} HERE={REPO / 'hack' / 'testcluster'} REPO={REPO} KWOK_VERSION=v0",
        _shell_function(tc, "write_kwok_config"), "write_kwok_config"])
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    config = (state / "run" / "kwok.yaml").read_text()
    assert ("name: wanwide-networkchaos-inject" in config) is not real
    assert ("name: wanwide-networkchaos-recover" in config) is not real
    assert "# from hack/testcluster/stages/mariadb-operator.yaml" in config  # the database stand-ins stay
    assert "jitterDurationMilliseconds: 800" in config
