"""Fixtures for tests that need a real Kubernetes control plane.

``testcluster`` (session scope) runs ``hack/testcluster.sh up`` (idempotent:
seconds when the binaries are cached and the cluster already runs) and returns a
:class:`TestCluster`. If this session started the cluster, it runs
``hack/testcluster.sh down`` at the end (set ``WANWIDE_TESTCLUSTER_KEEP=1`` to
keep it up). Set ``WANWIDE_TESTCLUSTER=skip`` to skip every test that needs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "testcluster.sh"
UPSTREAM_CRDS = REPO / "hack" / "upstream-crds.sh"
SESSION_START = datetime.now(UTC)  # tests marked "audit" read the API server's audit log from here on


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``audit`` run last: they check what the session's other tests did. Tests marked ``vm``
    (VM nodes: they boot VMs, minutes under TCG) run only when ``-m vm`` selects them, as tests/vm/'s."""
    items.sort(key=lambda i: i.get_closest_marker("audit") is not None)
    if not re.search(r"(?<!not )\bvm\b", config.getoption("markexpr") or ""):
        for item in items:
            if item.get_closest_marker("vm") is not None:
                item.add_marker(pytest.mark.skip(reason="boots VMs (VM nodes): select with -m vm (docs/chaos-mesh.md)"))


@pytest.fixture(scope="session")
def session_start() -> datetime:
    return SESSION_START


@dataclass
class TestCluster:
    """Handle on the running loopback cluster."""

    __test__ = False  # not a test class for pytest

    state: Path
    kubeconfig: Path  # admin (group system:masters); may impersonate anyone
    tester_kubeconfig: Path  # unprivileged user "wanwide-tester" (group wanwide:testers)
    s3: dict[str, str]  # AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3_ENDPOINT, AWS_DEFAULT_REGION
    bin_dir: Path  # helm, kwok, etcd … (unversioned links to the cached binaries)
    env: dict[str, str] = field(default_factory=dict)  # os.environ + KUBECONFIG + s3 + PATH

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        as_user: str | None = None,
        as_groups: tuple[str, ...] = (),
        kubeconfig: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against the cluster; returns the CompletedProcess (text).

        ``as_user``/``as_groups`` impersonate (``--as``/``--as-group``) as admin.
        With ``check`` a non-zero exit raises AssertionError showing stderr.
        """
        cmd = ["kubectl", f"--kubeconfig={kubeconfig or self.kubeconfig}"]
        if as_user:
            cmd.append(f"--as={as_user}")
        cmd += [f"--as-group={g}" for g in as_groups]
        cmd += list(args)
        p = subprocess.run(
            cmd, input=input, capture_output=True, text=True, timeout=timeout, env=self.env
        )
        if check and p.returncode != 0:
            raise AssertionError(
                f"{' '.join(cmd[2:])} failed ({p.returncode}):\n{p.stderr}{p.stdout}"
            )
        return p

    def kubectl_json(self, *args: str, **kw) -> dict:
        """``kubectl ... -o json`` parsed."""
        return json.loads(self.kubectl(*args, "-o", "json", **kw).stdout)

    def apply(self, manifest: str, namespace: str | None = None) -> None:
        """``kubectl apply -f -`` of a YAML string."""
        ns = ["-n", namespace] if namespace else []
        self.kubectl("apply", *ns, "-f", "-", input=manifest)

    def namespace(self, prefix: str = "t") -> str:
        """Create a fresh namespace (named ``<prefix>-<random>``) and return its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.kubectl("create", "namespace", name)
        return name

    def helm(self, *args: str, check: bool = True, timeout: float = 120):
        p = subprocess.run(
            [str(self.bin_dir / "helm"), "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True, text=True, timeout=timeout, env=self.env,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{p.stderr}{p.stdout}")
        return p

    @staticmethod
    def upstream_crds(name: str) -> list[Path]:
        """Paths of the real upstream CRD files (``chaos-mesh``, ``prometheus-operator``)."""
        out = subprocess.run(
            [str(UPSTREAM_CRDS), name], capture_output=True, text=True, check=True
        ).stdout
        return [Path(line) for line in out.splitlines() if line.strip()]


def _read_env_file(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def connect() -> TestCluster:
    """``hack/testcluster.sh up`` (idempotent) and a handle on the cluster (also for bench/ scripts)."""
    # a cold build takes ~20-40 min; a warm up takes seconds
    up = subprocess.run([str(SCRIPT), "up"], capture_output=True, text=True, timeout=3600)
    if up.returncode != 0:
        raise RuntimeError(f"hack/testcluster.sh up failed:\n{up.stderr[-6000:]}")
    env_lines = subprocess.run(
        [str(SCRIPT), "env"], capture_output=True, text=True, check=True
    ).stdout
    exported = {}
    for line in env_lines.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            exported[k] = v
    state = Path(exported["WANWIDE_TESTCLUSTER_DIR"])
    bin_dir = Path(exported["PATH"].split(":", 1)[0])
    s3 = _read_env_file(state / "s3.env")
    env = dict(os.environ)
    env.update(s3)
    env["KUBECONFIG"] = str(state / "kubeconfig")
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    return TestCluster(
        state=state,
        kubeconfig=state / "kubeconfig",
        tester_kubeconfig=state / "kubeconfig-tester",
        s3=s3,
        bin_dir=bin_dir,
        env=env,
    )


def cluster_running() -> bool:
    return (
        subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True).returncode == 0
    )


@pytest.fixture(scope="session")
def testcluster() -> Iterator[TestCluster]:
    if os.environ.get("WANWIDE_TESTCLUSTER") == "skip":
        pytest.skip("WANWIDE_TESTCLUSTER=skip")
    started_here = not cluster_running()
    try:
        tc = connect()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    # Several pytest sessions (people, CI) may share one cluster: each registers
    # itself, and the one that started it stops it only when no other is left.
    users = tc.state / "run" / "users"
    users.mkdir(parents=True, exist_ok=True)
    me = users / str(os.getpid())
    me.touch()
    try:
        yield tc
    finally:
        me.unlink(missing_ok=True)
        if (
            started_here
            and os.environ.get("WANWIDE_TESTCLUSTER_KEEP") != "1"
            and not _other_live_users(users)
        ):
            subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, timeout=180)


def _other_live_users(users: Path) -> bool:
    alive = False
    for f in users.iterdir():
        try:
            os.kill(int(f.name), 0)
            alive = True
        except (ValueError, ProcessLookupError):
            f.unlink(missing_ok=True)
        except PermissionError:
            alive = True
    return alive


# ---- the operator under test (shared by the operator test modules) -----------------------

@pytest.fixture(scope="session")
def env(testcluster, tmp_path_factory):

    from tests.cluster.operator_env import (
        BUCKET,
        Operator,
        RallyStandIn,
        install_crds,
        install_rbac,
        results_store,
    )

    tc = testcluster
    subprocess.run([str(REPO / "hack" / "testcluster.sh"), "nodes", "9"], check=True, capture_output=True)
    ns = tc.namespace("bench")
    install_crds(tc)
    kubeconfig = install_rbac(tc, [ns])
    results_store(tc, ns)
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    op = Operator(tc, kubeconfig, [ns], log, tmpdir=tmp_path_factory.mktemp("operator-tmp"))
    op.start()
    standin = RallyStandIn(tc, BUCKET)
    standin.start()
    yield {"tc": tc, "ns": ns, "op": op, "standin": standin, "log": log}
    standin.stop_flag.set()
    try:  # the session's trials (cleanup: Never) gone while the operator still runs: etcd outlives `down`, and a
        # later real node would run their pods (stop 57 found the Nova test's trials there, ImagePullBackOff)
        from tests.cluster.stack_env import forget_trials

        forget_trials(tc, ns)
    except Exception as e:  # noqa: BLE001 - the operator is stopped and its log printed whatever this says
        print(f"trial namespaces not deleted: {e}")
    op.stop()
    print(log.read_text()[-5000:])




@pytest.fixture(scope="module")
def realnode(testcluster):
    """The real node (``hack/testcluster.sh up --real-node``; idempotent), once per module."""
    from tests.cluster.realnode_env import start_realnode

    return start_realnode(testcluster)
